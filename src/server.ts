// The process: configuration, logger, metrics, storage, listen, graceful
// shutdown.
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance, FastifyListenOptions } from 'fastify'
import type { Logger } from 'pino'
import { buildAdminApp, type AdminOptions } from './http/admin.js'
import { DeadlineError, within as withDeadline } from './deadline.js'
import { buildApp, type AppDeps } from './http/app.js'
import { ConfigError, loadConfig, redactUrl, type Config } from './config.js'
import { openStorage } from './db/open.js'
import type { Storage } from './db/storage.js'
import type { WriteTurn } from './db/sqlite/write-turns.js'
import { timedStorage } from './db/timed.js'
import { openRateLimitStore } from './limits/open.js'
import type { RateLimitStore } from './limits/store.js'
import type { Metrics, WebhookOutcome } from './telemetry/metrics.js'
import { createLog, type ServiceLog } from './telemetry/log.js'
import { purgeExpiredIdempotencyKeys } from './pets/purge.js'
import { Dispatcher } from './webhooks/dispatcher.js'
import { announceExpiries } from './keys/announcements.js'
import { shutdownTracing, tracingStarted } from './tracing/hooks.js'

/** Requests in flight get this long to finish once a stop is asked for. */
const SHUTDOWN_MS = 30_000
/** And the log this long to be written out, whatever its reader does. */
const LOG_FLUSH_MS = 2_000

export async function serve (config: Config = loadConfig()): Promise<void> {
  const log = createLog({ level: config.logLevel, format: config.logFormat })
  try {
    await start(config, log)
  } catch (error) {
    // What was logged before the failure (a store unreachable…) is worth reading.
    await log.flush(LOG_FLUSH_MS)
    throw error
  }
}

async function start (config: Config, log: ServiceLog): Promise<void> {
  const { logger } = log
  // Set once there is something to close; a stop asked for before that has nothing to finish.
  let stop: (() => Promise<void>) | undefined
  // close-with-grace (https://github.com/mcollina/close-with-grace) runs the
  // close once, on SIGTERM or SIGINT, or on an error nothing caught, and
  // exits: 0 after a stop; 1 after an error, a failed close or its deadline.
  const exit = closeWithGrace({
    // Its own deadline only backs ours up (below): the log gets its flush first.
    delay: SHUTDOWN_MS + 2 * LOG_FLUSH_MS,
    // Everything worth saying is said in the service's log.
    logger: false,
    // Other signals keep their default action, and an idle event loop is no reason to close.
    skip: ['SIGHUP', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2', 'beforeExit'],
    // Past these, it exits at once: the line is written only if the log's buffer drains first.
    onSecondSignal: (signal) => { logger.error({ signal }, 'second signal while shutting down: exiting') },
    onSecondError: (error) => { logger.fatal({ err: error }, 'uncaught exception while shutting down: exiting') },
    onTimeout: () => { logger.error('shutdown did not finish: exiting') }
  }, async ({ signal, err }) => {
    if (err !== undefined) {
      // An error nothing caught leaves the process in an unknown state: say
      // what it was, write the log out, and let the process manager restart it.
      logger.fatal({ err }, 'uncaught exception: exiting')
      await writeOut(log)
      return
    }
    logger.info({ signal }, 'shutting down: finishing requests in flight')
    const outcome = await within(SHUTDOWN_MS, stop?.() ?? Promise.resolve())
    if (outcome === 'done') logger.info('stopped')
    else if (outcome === 'late') logger.error(`requests in flight did not finish within ${SHUTDOWN_MS / 1000} s; exiting`)
    else logger.error({ err: outcome.failed }, 'shutdown failed')
    await writeOut(log)
    // close-with-grace exits 1 when the close throws.
    if (outcome !== 'done') throw new Error('shutdown did not complete')
  })

  try {
    stop = config.workers > 1
      ? (await (await import('./workers/supervisor.js')).startWorkers(config, log)).stop
      : await startOneProcess(config, log)
  } catch (error) {
    // A start that failed is reported by the caller, which exits.
    exit.uninstall()
    throw error
  }
}

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
 * share, used without Redis or while it is unreachable (default: this thread's).
 * `writeTurn`: the workers' turns at the SQLite file. `processMetrics`: whether
 * this thread reports the process's CPU and memory, which one thread does for all.
 * `inFlight`: the workers' table of requests in flight per key, and this one's column.
 */
export async function openPublicService (
  config: Config, log: ServiceLog,
  { limiter: shared, writeTurn, processMetrics, inFlight }: { limiter?: RateLimitStore, writeTurn?: WriteTurn, processMetrics: boolean, inFlight?: AppDeps['inFlight'] }
): Promise<PublicService> {
  const { logger } = log
  const opened = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize, writeTurn })
  try {
    // Every instance on one database shares its counters, and no other deployment's.
    const deployment = (await opened.secret('deployment')).subarray(0, 8).toString('hex')
    const limiter = await openRateLimitStore(config.redisUrl, logger, deployment, shared)
    // prom-client is loaded only when metrics are served.
    const metrics = config.adminPort === undefined
      ? undefined
      : (await import('./telemetry/metrics.js')).createMetrics({ limiter, poolUse: () => opened.poolUse(), droppedLogLines: log.dropped, processMetrics })
    const storage = metrics === undefined ? opened : timedStorage(opened, metrics.query)
    const app = await buildApp({ config, storage, limiter, logger, metrics, inFlight })
    return { app, storage, metrics, rateLimitStore: limiter.name, closeStores: async () => { await Promise.all([storage.close(), limiter.close()]) } }
  } catch (error) {
    await opened.close()
    throw error
  }
}

async function startOneProcess (config: Config, log: ServiceLog): Promise<() => Promise<void>> {
  const { logger } = log
  const { app, storage, metrics, rateLimitStore, closeStores } = await openPublicService(config, log, { processMetrics: true })
  // The admin API is on only when both the port and the token are set (docs/KEYS.md: The admin API).
  const stopPurging = purgeExpiredIdempotencyKeys(storage, Date.now, logger)
  const dispatcher = startDispatcher(config, storage, logger, metrics)
  // Metrics first: a load balancer may send traffic as soon as the public port listens.
  const { admin, adminAddress } = await startAdmin(config, logger, { storage, metrics, closeStores })
  const address = await listenOn(app, config.host, ['PORT', config.port], closeStores, {
    listenTextResolver: (address) => `listening on ${address}`
  })
  // Operators' scripts wait for this line, whatever the log level.
  if (!logger.isLevelEnabled('info')) logger.child({}, { level: 'info' }).info(`listening on ${address}`)
  announceStart(config, logger, { address, adminAddress, rateLimitStore, workers: 1 })
  return async () => {
    stopPurging()
    // Stops accepting, waits for requests in flight, then closes the stores.
    await Promise.all([app.close(), admin?.close(), dispatcher.stop()])
    await closeStores()
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

/** The log and the last spans (when tracing is on), side by side, within the log's own time. */
async function writeOut (log: ServiceLog): Promise<void> {
  await Promise.all([log.flush(LOG_FLUSH_MS), shutdownTracing(LOG_FLUSH_MS)])
}

/**
 * Whether `closing` ended within `ms`. Written here, not left to
 * close-with-grace's own deadline, because that one exits at once, and the
 * line saying why would stay in the log's buffer.
 */
async function within (ms: number, closing: Promise<void>): Promise<'done' | 'late' | { failed: unknown }> {
  try {
    await withDeadline(ms, async () => { await closing })
    return 'done'
  } catch (error) {
    return error instanceof DeadlineError && error.ms === ms ? 'late' : { failed: error }
  }
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
