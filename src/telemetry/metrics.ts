// What the service counts for its operators, in Prometheus's terms
// (prom-client), served on ADMIN_PORT by admin.ts. Every label has a small,
// fixed set of values: route templates (never raw paths), methods, statuses,
// error codes and storage operation names; never key ids or addresses.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { RateLimitStore } from '../limits/store.js'
import type { PoolUse } from '../db/storage.js'

export interface MetricSources {
  /** The rate-limit store this thread decides with; the main thread of several workers has none. */
  limiter?: Pick<RateLimitStore, 'name' | 'health'>
  poolUse: () => PoolUse | undefined
  droppedLogLines: () => number
  /**
   * Whether to report the process's own figures (CPU, memory, event loop).
   * Of several worker threads, only the main thread does: they are one
   * process, and /metrics adds every thread's counts up (workers/supervisor.ts).
   */
  processMetrics?: boolean
}

/** What /metrics serves: one registry, or every worker's added up. */
export type MetricsText = Pick<Registry, 'contentType' | 'metrics'>

export interface Metrics {
  readonly registry: Registry
  /** One answered request; `route` is the route's template, or `unmatched`. */
  request: (method: string, route: string, status: number, seconds: number) => void
  /** A request refused by the rate limiter: `rate_limited` or `api_key_banned`. */
  refused: (code: string) => void
  /** A key has just earned a ban. */
  banned: () => void
  /** A request with a valid key, by its plan (never by key: keys would make the series unbounded). */
  keyRequest: (plan: string, outcome: 'admitted' | 'refused') => void
  /** One call to the database; `failed` when it threw. */
  query: (operation: string, seconds: number, failed: boolean) => void
  /** An API request shed under overload (`on`), or that would have been (`log`): plugins/shed.ts. */
  shed: (mode: 'log' | 'on') => void
  /** The event loop's mean delay over the last half second, as the shedder read it (telemetry/load.ts). */
  eventLoopDelay: (ms: number) => void
  /** A webhook delivery attempt that ended: `retry` when it was not the delivery's first. */
  webhookAttempt: (outcome: WebhookOutcome, retry: boolean) => void
  /** Serves the age of the oldest event still to deliver, read at each scrape; called by the thread that runs the dispatcher. */
  watchWebhooks: (oldestUndelivered: () => Promise<number | undefined>, now: () => number) => void
}

/** How an attempt left its delivery: delivered, failed for good, or to be tried again. */
export type WebhookOutcome = 'succeeded' | 'failed' | 'retried'

/** From a cache hit (well under a millisecond) to the 5 s a request may wait for the database. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const QUERY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]

export function createMetrics ({ limiter, poolUse, droppedLogLines, processMetrics = true }: MetricSources): Metrics {
  // One registry per instance of the app, so that tests can build several.
  // Metrics read at scrape time (collect) are registered on it explicitly.
  const registry = new Registry()
  if (processMetrics) collectDefaultMetrics({ register: registry })

  const requests = new Counter({
    name: 'petstore_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry]
  })
  const durations = new Histogram({
    name: 'petstore_http_request_duration_seconds',
    help: 'Time from a request\'s arrival to its response, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry]
  })
  const refusals = new Counter({
    name: 'petstore_rate_limit_refusals_total',
    help: 'Requests refused with 429, by error code: rate_limited (out of quota), api_key_banned or concurrency_limited (too many requests in flight).',
    labelNames: ['code'] as const,
    registers: [registry]
  })
  for (const code of ['rate_limited', 'api_key_banned', 'concurrency_limited']) refusals.inc({ code }, 0)
  const keyRequests = new Counter({
    name: 'petstore_key_requests_total',
    help: 'Requests with a valid key, by the key\'s plan and outcome: admitted (served, whatever the status) or refused (429), as usage counts them.',
    labelNames: ['plan', 'outcome'] as const,
    registers: [registry]
  })
  const bans = new Counter({
    name: 'petstore_rate_limit_bans_total',
    help: 'Bans started by this instance: keys that kept sending after being refused.',
    registers: [registry]
  })
  if (limiter !== undefined) {
    registry.registerMetric(new Gauge({
      name: 'petstore_rate_limit_store_degraded',
      help: 'Whether the rate-limit store is degraded (1): with Redis, this instance cannot reach it and limits in-process, on its own.',
      labelNames: ['store'] as const,
      registers: [],
      // Of several workers, degraded when any one is.
      aggregator: 'max',
      async collect () {
        const health = await limiter.health().catch(() => ({ status: 'down' }))
        this.set({ store: limiter.name }, health.status === 'ok' ? 0 : 1)
      }
    }))
  }
  const queries = new Histogram({
    name: 'petstore_db_query_duration_seconds',
    help: 'Time spent in each storage operation, by operation and outcome (ok or error).',
    labelNames: ['operation', 'outcome'] as const,
    buckets: QUERY_BUCKETS,
    registers: [registry]
  })
  // Only a backend with a pool (PostgreSQL) has these; each scrape reads the pool once per gauge.
  const poolGauge = <Label extends string>(name: string, help: string, labelNames: readonly Label[], show: (gauge: Gauge<Label>, use: PoolUse) => void): Gauge<Label> =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect () {
        const use = poolUse()
        if (use !== undefined) show(this, use)
      }
    })
  if (poolUse() !== undefined) {
    poolGauge('petstore_db_pool_connections', 'PostgreSQL connections of this instance\'s pool: open, idle, and the most it may open (max).', ['state'], (gauge, use) => {
      gauge.set({ state: 'open' }, use.open)
      gauge.set({ state: 'idle' }, use.idle)
      gauge.set({ state: 'max' }, use.max)
    })
    poolGauge('petstore_db_pool_waiting', 'Storage operations waiting for a PostgreSQL connection.', [], (gauge, use) => { gauge.set(use.waiting) })
    poolGauge('petstore_db_pool_wait_seconds', 'How long the storage operation that has waited longest for a PostgreSQL connection, of those still waiting, has waited; 0 when none waits.', [],
      (gauge, use) => { gauge.set(use.longestWaitMs / 1000) })
  }
  const sheds = new Counter({
    name: 'petstore_shed_requests_total',
    help: 'API requests shed because the service was overloaded, by SHED mode: on (answered 503 overloaded) or log (served, but would have been shed).',
    labelNames: ['mode'] as const,
    registers: [registry]
  })
  for (const mode of ['log', 'on']) sheds.inc({ mode }, 0)
  // Registered with the first reading: with SHED=off, nothing reads the event loop.
  let loopDelay: Gauge | undefined
  const loopDelayGauge = (): Gauge => new Gauge({
    name: 'petstore_event_loop_delay_seconds',
    help: 'The event loop\'s mean delay over the last half second, as the shedder read it (SHED=log or on): about how long new work waited for the loop.',
    // Of several workers, the most loaded.
    aggregator: 'max',
    registers: [registry]
  })
  const webhookAttempts = new Counter({
    name: 'petstore_webhook_deliveries_total',
    help: 'Webhook delivery attempts that ended, by outcome: succeeded (a 2xx), failed (a final answer, or retries given up), retried (to be tried again).',
    labelNames: ['outcome'] as const,
    registers: [registry]
  })
  const webhookRetries = new Counter({
    name: 'petstore_webhook_retries_total',
    help: 'Webhook delivery attempts that were not their delivery\'s first, whatever their outcome.',
    registers: [registry]
  })
  let droppedSoFar = 0
  registry.registerMetric(new Counter({
    name: 'petstore_log_lines_dropped_total',
    help: 'Log lines lost because stdout\'s reader was too slow (the buffer was full) or had gone.',
    registers: [],
    collect () {
      const now = droppedLogLines()
      this.inc(now - droppedSoFar)
      droppedSoFar = now
    }
  }))

  return {
    registry,
    request (method, route, status, seconds) {
      const labels = { method, route, status: String(status) }
      requests.inc(labels)
      durations.observe(labels, seconds)
    },
    refused (code) { refusals.inc({ code }) },
    banned () { bans.inc() },
    keyRequest (plan, outcome) { keyRequests.inc({ plan, outcome }) },
    query (operation, seconds, failed) { queries.observe({ operation, outcome: failed ? 'error' : 'ok' }, seconds) },
    shed (mode) { sheds.inc({ mode }) },
    eventLoopDelay (ms) {
      loopDelay ??= loopDelayGauge()
      loopDelay.set(ms / 1000)
    },
    webhookAttempt (outcome, retry) {
      webhookAttempts.inc({ outcome })
      if (retry) webhookRetries.inc()
    },
    watchWebhooks (oldestUndelivered, now) {
      // Only the thread that delivers counts attempts: their series start at 0 there, and nowhere else.
      for (const outcome of ['succeeded', 'failed', 'retried']) webhookAttempts.inc({ outcome }, 0)
      registry.registerMetric(new Gauge({
        name: 'petstore_webhook_oldest_undelivered_seconds',
        help: 'Age of the oldest event still to deliver (not fanned out yet, or with a delivery pending to an enabled endpoint); 0 when none is. Read from the database at each scrape, so instances sharing it agree.',
        registers: [],
        aggregator: 'max',
        async collect () {
          const at = await oldestUndelivered().catch(() => undefined)
          this.set(at === undefined ? 0 : Math.max(0, (now() - at) / 1000))
        }
      }))
    }
  }
}
