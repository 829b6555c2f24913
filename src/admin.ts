// The operators' port (ADMIN_PORT): Prometheus metrics at GET /metrics.
// A server of its own, so that the public port never serves them and a
// firewall can keep the two apart.
//
// Built as app.ts builds the public one: the same edge (edge.ts: its
// connection timeouts and caps, and the Error body for a request Node's
// parser refuses), the same error model (plugins/errors.ts) for 404 and
// every other error, then each part of the admin interface as a plugin of
// its own. Nothing here is rate limited.
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import { Errors } from './errors.js'
import { DEFAULT_CONNECTION_CAPS, DEFAULT_TIMEOUTS, createEdge, type Timeouts } from './edge.js'
import type { Metrics } from './metrics.js'
import errorsPlugin, { sendError } from './plugins/errors.js'
import { framingOutsideGate } from './plugins/gate.js'

export interface AdminOptions {
  /** Connection timeouts (edge.ts); tests shorten them. */
  timeouts?: Partial<Timeouts>
}

export async function buildAdminApp (metrics: Metrics, { timeouts = {} }: AdminOptions = {}): Promise<FastifyInstance> {
  // The edge counts each answer it writes by hand against the client's
  // address, for the public port's rate-limit headers; here there are none.
  const edge = createEdge({ countAddress: async () => ({}), timeouts: { ...DEFAULT_TIMEOUTS, ...timeouts }, caps: DEFAULT_CONNECTION_CAPS })
  const app = Fastify({
    logger: false,
    serverFactory: edge.serverFactory,
    clientErrorHandler: edge.clientError,
    // Idle connections are the edge's to close, after a grace.
    forceCloseConnections: false,
    // A URL the router cannot decode (`%zz`): the Error body, as on the public port.
    frameworkErrors: (_error, _request, reply) => { sendError(reply, Errors.invalidUrl()) }
  })
  await app.register(errorsPlugin)
  // The edge passes on a request without Host or with an unmet Expect; it is refused here.
  await app.register(framingOutsideGate)
  await app.register(metricsRoute, { metrics })
  return app
}

const metricsRoute: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/metrics', async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
}
