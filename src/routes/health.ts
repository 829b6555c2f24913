// Health checks for load balancers and orchestrators: outside /v1, no key,
// no rate limit. /healthz: the process answers. /readyz: its database and
// rate-limit store answer too. A degraded store (a Redis store that cannot
// reach Redis and limits in-process) still limits every request, so the
// instance stays ready (200) and the body names the degradation; only a
// database that does not answer or a store that is down makes it 503.
import type { FastifyPluginAsync } from 'fastify'
import { DeadlineError, within } from '../deadline.js'
import type { StoreConnection } from '../db/storage.js'
import type { RateLimitStore, StoreHealth } from '../limits/store.js'

interface HealthOptions {
  storage: StoreConnection
  limiter: RateLimitStore
}

const CHECK_TIMEOUT_MS = 5000
const RETRY_AFTER_SECONDS = 5
/**
 * How long an answer of /readyz is given again to whoever asks. The checks
 * run a query and a Redis PING, and /readyz needs no key and counts against
 * no limit: without this, anyone could make the service run them as fast as
 * they can send. A second is fresher than any orchestrator polls.
 */
const ANSWER_KEPT_MS = 1000

interface Readiness {
  database: string
  store: StoreHealth
}

/**
 * /healthz alone, for the admin listener too: its connections do not queue
 * behind the public port's, so a liveness probe sent there answers while a
 * client's burst fills the public port's accept queue (docs/OPERATING.md:
 * Health checks).
 */
export const livenessRoute: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
}

const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { storage, limiter }) => {
  await app.register(livenessRoute)

  /**
   * The checks in flight, or their answer for ANSWER_KEPT_MS after it came:
   * callers at the same moment share one run of the checks, and one run at
   * most is in flight at a time, however slow the checks are.
   */
  let latest: Promise<Readiness> | undefined
  const readiness = async (): Promise<Readiness> => {
    if (latest === undefined) {
      latest = probe(storage, limiter)
      // probe() never rejects: check() turns every failure into an answer.
      latest.then(() => { setTimeout(() => { latest = undefined }, ANSWER_KEPT_MS).unref() }, () => {})
    }
    return await latest
  }

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const { database, store } = await readiness()
    const ready = database === 'ok' && store.status !== 'down'
    const rateLimitStore = store.status === 'ok' ? `ok (${limiter.name})` : `${store.status} (${limiter.name}): ${store.reason}`
    // Only unreadiness is logged here: a degraded store logs its own change
    // of state once, and readiness is polled too often to repeat it.
    if (!ready) {
      request.log.warn({ database, rateLimitStore }, 'not ready')
      // As the API's own 503 (docs/API.md): when to ask again.
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
    }
    return reply.code(ready ? 200 : 503).send({
      status: ready ? (store.status === 'degraded' ? 'degraded' : 'ok') : 'unavailable',
      checks: { database: `${database} (${storage.backend})`, rateLimitStore }
    })
  })
}

async function probe (storage: StoreConnection, limiter: RateLimitStore): Promise<Readiness> {
  const [database, store] = await Promise.all([
    check(async () => { await storage.ping(); return 'ok' }, 'timeout', 'unreachable'),
    check<StoreHealth>(async () => await limiter.health(),
      { status: 'down', reason: `no answer within ${CHECK_TIMEOUT_MS / 1000} s` },
      { status: 'down', reason: 'health check failed' })
  ])
  return { database, store }
}

/** The answer of `work`; `failed` if it throws; `late` if it has not answered within CHECK_TIMEOUT_MS. */
async function check<T> (work: () => Promise<T>, late: T, failed: T): Promise<T> {
  try {
    return await within(CHECK_TIMEOUT_MS, work)
  } catch (error) {
    return error instanceof DeadlineError ? late : failed
  }
}

export default healthRoutes
