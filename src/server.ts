// The process: configuration, logger, the start (one process, or the
// workers' main thread: workers/supervisor.ts) and graceful shutdown. What
// the process shares with the worker threads is in run/service.ts.
import closeWithGrace from 'close-with-grace'
import { DeadlineError, within as withDeadline } from './deadline.js'
import { loadConfig, type Config } from './config.js'
import { createLog, type ServiceLog } from './telemetry/log.js'
import { purgeExpiredIdempotencyKeys } from './pets/purge.js'
import { announceStart, listenOn, openPublicService, startAdmin, startDispatcher } from './run/service.js'
import { shutdownTracing } from './telemetry/tracing-hooks.js'

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
