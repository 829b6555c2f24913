// The operators' listener (ADMIN_HOST:ADMIN_PORT): metrics, and with
// ADMIN_TOKEN the admin API and the console (docs/KEYS.md: The admin API); a server
// of its own so that a firewall can keep it apart from the public port. Built
// as app.ts builds the public one (docs/INTERNALS.md, section "Admin listener").
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import type { Storage } from '../db/storage.js'
import type { Environment } from '../domain.js'
import { Errors } from '../errors.js'
import type { ConnectionCaps } from './connections.js'
import { DEFAULT_TIMEOUTS, createEdge, type Timeouts } from './edge.js'
import type { MetricsText } from '../telemetry/metrics.js'
import adminAuth from '../plugins/admin-auth.js'
import adminOpenapi, { ADMIN_PREFIX } from '../plugins/admin-openapi.js'
import errorsPlugin, { sendError } from '../plugins/errors.js'
import framingPlugin from '../plugins/framing.js'
import jsonBodyPlugin, { BODY_LIMIT } from '../plugins/json-body.js'
import { RequestLog, requestIdMaker } from '../telemetry/request-log.js'
import adminKeyRoutes from '../routes/admin-keys.js'
import adminWebhookRoutes from '../routes/admin-webhooks.js'
import adminOverviewRoutes from '../routes/admin-overview.js'
import adminDeprecationRoutes from '../routes/admin-deprecations.js'
import consoleRoutes from '../routes/console.js'
import { livenessRoute } from '../routes/health.js'
import methodNotAllowedRoutes, { collectPaths } from '../routes/method-not-allowed.js'
import { routerAnswerHeaders, setUpAnswers } from './answers.js'

/** What the admin API needs; without it, the listener serves metrics and /healthz alone. */
interface AdminApiOptions {
  /** ADMIN_TOKEN. */
  token: string
  storage: Storage
  /** The environment whose keys it makes. */
  environment: Environment
  /** Requests with the admin token an address may send a minute; default ADMIN_REQUESTS_PER_MINUTE (plugins/admin-auth.ts). */
  perMinute?: number
  /** WEBHOOK_ALLOW_PRIVATE: webhook URLs of private addresses, and http://, are taken; default: not. */
  webhookAllowPrivate?: boolean
}

export interface AdminOptions {
  /** What GET /metrics serves: this process's registry, or every worker's added up. */
  metrics?: { registry: MetricsText }
  api?: AdminApiOptions
  /** A pino logger; none in tests. */
  logger?: FastifyBaseLogger
  /** Unix milliseconds; injected so that tests control expiry and overlaps. */
  now?: () => number
  /** Connection timeouts (edge.ts); tests shorten them. */
  timeouts?: Partial<Timeouts>
}

/**
 * No cap per address: operators connect from loopback or a few addresses, so
 * one local process holding connections would lock them out. At the total the
 * connection idle longest makes room, so holding idle connections locks no one
 * out (docs/INTERNALS.md, section "Admin listener").
 */
const ADMIN_CONNECTION_CAPS: ConnectionCaps = {
  total: 1_024,
  perAddress: undefined
}

export async function buildAdminApp ({ metrics, api, logger, now = Date.now, timeouts = {} }: AdminOptions): Promise<FastifyInstance> {
  // The edge counts each answer it writes by hand against the client's
  // address, for the public port's rate-limit headers; here there are none.
  const edge = createEdge({ countAddress: async () => ({}), timeouts: { ...DEFAULT_TIMEOUTS, ...timeouts }, caps: ADMIN_CONNECTION_CAPS })
  const secrets = api === undefined ? [] : [api.token]
  const app = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger.child({ listener: 'admin' }) }),
    serverFactory: edge.serverFactory,
    clientErrorHandler: edge.clientError,
    // Idle connections are the edge's to close, after a grace.
    forceCloseConnections: false,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: false,
    requestIdHeader: false,
    // The admin token, sent where it does not belong (a URL, X-Request-Id), is never logged.
    genReqId: requestIdMaker(secrets),
    logController: new RequestLog(secrets),
    // A URL the router cannot decode (`%zz`): the Error body, as on the public port.
    frameworkErrors: (_error, request, reply) => {
      routerAnswerHeaders(request, reply)
      sendError(reply, Errors.invalidUrl())
    }
  })
  // As on the public port (app.ts): the request id, no sniffing or caching of any answer, and no body read after its answer.
  setUpAnswers(app)
  await app.register(errorsPlugin)
  // A request without Host or with an unmet Expect, which the edge passes on: after the admin token's check, before anything else.
  await app.register(framingPlugin)
  await app.register(jsonBodyPlugin)
  await app.register(livenessRoute)
  if (metrics !== undefined) await app.register(metricsRoute, { metrics })
  if (api !== undefined) {
    await app.register(consoleRoutes)
    await app.register(async function adminApi (scope) {
      await scope.register(adminAuth, { token: api.token, now, ...(api.perMinute === undefined ? {} : { perMinute: api.perMinute }) })
      await scope.register(adminOpenapi, { environment: api.environment })
      const paths = collectPaths(scope)
      await scope.register(adminKeyRoutes, { storage: api.storage, environment: api.environment, now })
      await scope.register(adminWebhookRoutes, { storage: api.storage, policy: { allowPrivate: api.webhookAllowPrivate ?? false }, now })
      await scope.register(adminOverviewRoutes, { storage: api.storage, now })
      await scope.register(adminDeprecationRoutes, { storage: api.storage, now })
      await scope.register(methodNotAllowedRoutes, { paths })
      // Unknown paths under the prefix need the token too: they tell nothing to whoever lacks it.
      scope.setNotFoundHandler(async (request) => { throw Errors.notFound(request.method, request.url) })
    }, { prefix: ADMIN_PREFIX })
  }
  return app
}

const metricsRoute: FastifyPluginAsync<{ metrics: { registry: MetricsText } }> = async (app, { metrics }) => {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
}
