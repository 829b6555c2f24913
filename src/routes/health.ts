// Health checks for load balancers and orchestrators: outside /v1, no key,
// no rate limit. /healthz: the process answers. /readyz: its database and
// rate-limit store answer too.
import type { FastifyPluginAsync } from 'fastify'
import type { Storage } from '../db/storage.js'
import type { RateLimitStore } from '../limits/store.js'

interface HealthOptions {
  storage: Storage
  limiter: RateLimitStore
}

const CHECK_TIMEOUT_MS = 5000

const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { storage, limiter }) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const [database, rateLimitStore] = await Promise.all([check(storage.ping()), check(limiter.ping())])
    const ready = database === 'ok' && rateLimitStore === 'ok'
    if (!ready) request.log.warn({ database, rateLimitStore }, 'not ready')
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ok' : 'unavailable',
      checks: { database: `${database} (${storage.backend})`, rateLimitStore: `${rateLimitStore} (${limiter.name})` }
    })
  })
}

async function check (probe: Promise<void>): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<string>((resolve) => { timer = setTimeout(() => resolve('timeout'), CHECK_TIMEOUT_MS) })
  try {
    return await Promise.race([probe.then(() => 'ok'), timeout])
  } catch {
    return 'unreachable'
  } finally {
    clearTimeout(timer)
  }
}

export default healthRoutes
