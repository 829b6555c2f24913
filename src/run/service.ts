// What the single process and each worker thread both run (docs/WORKERS.md):
// the public service's stores and app, the listen, and, for the process that
// keeps them, the operators' listener, the webhook dispatcher and the start's
// line. It imports nothing of server.ts or workers/, which import it, so
// that the process and its workers depend on it one way
// (docs/DEVELOPING.md#imports-flow-one-way).
import type { FastifyInstance, FastifyListenOptions } from 'fastify'
import type { Logger } from 'pino'
import { buildAdminApp, type AdminOptions } from '../http/admin.js'
import { buildApp, type AppDeps } from '../http/app.js'
import { ConfigError, redactUrl, type Config } from '../config.js'
import { openStorage } from '../db/open.js'
import type { Storage } from '../db/storage.js'
import type { WriteTurn } from '../db/sqlite/write-turns.js'
import { timedStorage } from '../db/timed.js'
import type { Degradation } from '../limits/degradation.js'
import { openRateLimitStore } from '../limits/open.js'
import type { RateLimitStore } from '../limits/store.js'
import type { Metrics, WebhookOutcome } from '../telemetry/metrics.js'
import type { ServiceLog } from '../telemetry/log.js'
import { Dispatcher } from '../webhooks/dispatcher.js'
import { announceExpiries } from '../keys/announcements.js'
import { tracingStarted } from '../telemetry/tracing-hooks.js'

/** What serves the public port: the process itself (WORKERS=1), or each worker thread. */
export interface PublicService {
  app: FastifyInstance
  storage: Storage
  metrics: Metrics | undefined
  /** The rate-limit store's name, for the start's log line. */
  rateLimitStore: string
  closeStores: () => Promise<void>
}

/**
 * The stores and the app of the public port. `limiter`: the counters all workers
 * share, used without Redis or while it is unreachable (default: this thread's),
 * and `degradation`, whether they are used in Redis's stead (limits/degradation.ts).
 * `writeTurn`: the workers' turns at the SQLite file. `processMetrics`: whether
 * this thread reports the process's CPU and memory, which one thread does for all.
 * `inFlight`: the workers' table of requests in flight per key, and this one's column.
 */
export async function openPublicService (
  config: Config, log: ServiceLog,
  { limiter: shared, degradation, writeTurn, processMetrics, inFlight }: {
    limiter?: RateLimitStore, degradation?: Degradation, writeTurn?: WriteTurn, processMetrics: boolean, inFlight?: AppDeps['inFlight']
  }
): Promise<PublicService> {
  const { logger } = log
  const opened = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize, writeTurn })
  try {
    // Every instance on one database shares its counters, and no other deployment's.
    const deployment = (await opened.secret('deployment')).subarray(0, 8).toString('hex')
    const limiter = await openRateLimitStore(config.redisUrl, logger, deployment, shared, degradation)
    // prom-client is loaded only when metrics are served.
    const metrics = config.adminPort === undefined
      ? undefined
      : (await import('../telemetry/metrics.js')).createMetrics({ limiter, poolUse: () => opened.poolUse(), droppedLogLines: log.dropped, processMetrics })
    const storage = metrics === undefined ? opened : timedStorage(opened, metrics.query)
    const app = await buildApp({ config, storage, limiter, logger, metrics, inFlight })
    return { app, storage, metrics, rateLimitStore: limiter.name, closeStores: async () => { await Promise.all([storage.close(), limiter.close()]) } }
  } catch (error) {
    await opened.close()
    throw error
  }
}

/** How often the dispatcher's process looks for keys whose expiry is near or past (docs/WEBHOOKS.md: Quota and expiry). */
const EXPIRY_LOOK_MS = 60_000

/** The process's one webhook dispatcher (docs/WEBHOOKS.md): the single process's, or the main thread's with WORKERS. */
export function startDispatcher (config: Config, storage: Storage, logger: Logger, metrics: Metrics | undefined): Dispatcher {
  metrics?.watchWebhooks(async () => await storage.oldestUndeliveredEvent(), Date.now)
  const dispatcher = new Dispatcher({
    storage,
    logger: logger.child({ component: 'webhooks' }),
    allowPrivate: config.webhookAllowPrivate,
    chores: [{ name: 'key expiries', everyMs: EXPIRY_LOOK_MS, run: async (now) => await announceExpiries(storage, now) }],
    ...(metrics === undefined ? {} : { observe: (outcome: WebhookOutcome, retry: boolean) => { metrics.webhookAttempt(outcome, retry) } })
  })
  dispatcher.start()
  return dispatcher
}

/**
 * The operators' listener, when ADMIN_PORT is set: metrics, and the admin
 * API when ADMIN_TOKEN is too (docs/KEYS.md: The admin API). A port that cannot be
 * had closes the stores and ends the start.
 */
export async function startAdmin (
  config: Config, logger: Logger,
  { storage, metrics, closeStores }: { storage: Storage, metrics: AdminOptions['metrics'], closeStores: () => Promise<void> }
): Promise<{ admin: FastifyInstance | undefined, adminAddress: string | undefined }> {
  if (metrics === undefined || config.adminPort === undefined) return { admin: undefined, adminAddress: undefined }
  const api = config.adminToken === undefined
    ? undefined
    : { token: config.adminToken, storage, environment: config.environment, webhookAllowPrivate: config.webhookAllowPrivate }
  const admin = await buildAdminApp({ metrics, api, logger })
  return { admin, adminAddress: await listenOn(admin, config.adminHost, ['ADMIN_PORT', config.adminPort], closeStores) }
}

/** The line that says what started and where; `listening on …` is said before it. */
export function announceStart (
  config: Config, logger: Logger, { address, adminAddress, rateLimitStore, workers }: { address: string, adminAddress: string | undefined, rateLimitStore: string, workers: number }
): void {
  const metrics = adminAddress === undefined ? undefined : `${adminAddress}/metrics`
  const adminApi = adminAddress === undefined || config.adminToken === undefined ? undefined : `${adminAddress}/admin/v1`
  // The operator console is served beside the admin API, and only with it (docs/KEYS.md: The console).
  const consoleUrl = adminAddress === undefined || config.adminToken === undefined ? undefined : `${adminAddress}/admin/`
  const tracing = config.tracing === undefined || !tracingStarted() ? undefined : redactUrl(config.tracing.endpoint)
  logger.info({ environment: config.environment, database: redactUrl(config.databaseUrl), rateLimitStore, workers, address, metrics, adminApi, console: consoleUrl, tracing }, 'petstore started')
}

/** Listens on HOST and the port the variable names, and gives the address; a port that cannot be had ends the start, naming both. */
export async function listenOn (
  app: FastifyInstance, host: string, [variable, port]: [string, number], closeStores: () => Promise<void>,
  options: Pick<FastifyListenOptions, 'listenTextResolver'> & { reusePort?: boolean } = {}
): Promise<string> {
  try {
    return await app.listen({ host, port, ...options })
  } catch (error) {
    await closeStores()
    throw new ConfigError(`cannot listen on HOST=${host} ${variable}=${port}: ${error instanceof Error ? error.message : String(error)}`)
  }
}
