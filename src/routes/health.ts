// Health checks for load balancers and orchestrators: outside /v1, no key,
// no rate limit. /healthz: the process answers. /readyz: its database and
// rate-limit store answer too. A degraded store (a Redis store that cannot
// reach Redis and limits in-process) still limits every request, so the
// instance stays ready (200) and the body names the degradation; only a
// database that does not answer or a store that is down makes it 503.
import type { FastifyPluginAsync } from 'fastify'
import type { Storage } from '../db/storage.js'
import type { RateLimitStore, StoreHealth } from '../limits/store.js'

interface HealthOptions {
  storage: Storage
  limiter: RateLimitStore
}

const CHECK_TIMEOUT_MS = 5000
const RETRY_AFTER_SECONDS = 5

const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { storage, limiter }) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const [database, store] = await Promise.all([
      check(async () => { await storage.ping(); return 'ok' }, 'timeout', 'unreachable'),
      check<StoreHealth>(async () => await limiter.health(),
        { status: 'down', reason: `no answer within ${CHECK_TIMEOUT_MS / 1000} s` },
        { status: 'down', reason: 'health check failed' })
    ])
    const ready = database === 'ok' && store.status !== 'down'
    const rateLimitStore = store.status === 'ok' ? `ok (${limiter.name})` : `${store.status} (${limiter.name}): ${store.reason}`
    // Only unreadiness is logged here: a degraded store logs its own change
    // of state once, and readiness is polled too often to repeat it.
    if (!ready) {
      request.log.warn({ database, rateLimitStore }, 'not ready')
      // As the API's own 503 (DECISIONS §6): when to ask again.
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
    }
    return reply.code(ready ? 200 : 503).send({
      status: ready ? (store.status === 'degraded' ? 'degraded' : 'ok') : 'unavailable',
      checks: { database: `${database} (${storage.backend})`, rateLimitStore }
    })
  })
}

/** The probe's answer; `failed` if it throws; `late` if it has not answered within CHECK_TIMEOUT_MS. */
async function check<T> (probe: () => Promise<T>, late: T, failed: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<T>((resolve) => { timer = setTimeout(() => resolve(late), CHECK_TIMEOUT_MS) })
  try {
    return await Promise.race([probe(), timeout])
  } catch {
    return failed
  } finally {
    clearTimeout(timer)
  }
}

export default healthRoutes
