// The operators' port (ADMIN_PORT): Prometheus metrics at GET /metrics.
// A server of its own, so that the public port never serves them and a
// firewall can keep the two apart.
import Fastify, { type FastifyInstance } from 'fastify'
import type { Metrics } from './metrics.js'

export async function buildAdminApp (metrics: Metrics): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  app.get('/metrics', async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
  return app
}
