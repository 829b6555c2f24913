// The process: configuration, logger, metrics, storage, listen, graceful
// shutdown.
import type { FastifyInstance, FastifyListenOptions } from 'fastify'
import { buildAdminApp } from './admin.js'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, redactUrl, type Config } from './config.js'
import { openStorage } from './db/open.js'
import { timedStorage } from './db/timed.js'
import { openRateLimitStore } from './limits/open.js'
import { createLog, type ServiceLog } from './log.js'
import { purgeExpiredIdempotencyKeys } from './pets/purge.js'

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
  const exit = (code: number): void => {
    log.flush(LOG_FLUSH_MS).finally(() => process.exit(code)).catch(() => {})
  }
  // An error nothing caught leaves the process in an unknown state: say
  // what it was, write the log out, and let the process manager restart it.
  process.once('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception: exiting')
    exit(1)
  })

  const opened = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize })
  // Every instance on one database shares its counters, and no other deployment's.
  const deployment = (await opened.secret('deployment')).subarray(0, 8).toString('hex')
  const limiter = await openRateLimitStore(config.redisUrl, logger, deployment)
  // prom-client is loaded only when metrics are served.
  const metrics = config.adminPort === undefined
    ? undefined
    : (await import('./metrics.js')).createMetrics({ limiter, poolUse: () => opened.poolUse(), droppedLogLines: log.dropped })
  const storage = metrics === undefined ? opened : timedStorage(opened, metrics.query)
  const app = await buildApp({ config, storage, limiter, logger, metrics })
  const admin = metrics === undefined ? undefined : await buildAdminApp(metrics)
  const stopPurging = purgeExpiredIdempotencyKeys(storage, Date.now, logger)
  const closeStores = async (): Promise<void> => { await Promise.all([storage.close(), limiter.close()]) }

  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing requests in flight')
    const forced = setTimeout(() => {
      logger.error(`requests in flight did not finish within ${SHUTDOWN_MS / 1000} s; exiting`)
      exit(1)
    }, SHUTDOWN_MS)
    forced.unref()
    stopPurging()
    // Stops accepting, waits for requests in flight, then closes the stores.
    Promise.all([app.close(), admin?.close()])
      .then(closeStores)
      .then(() => { logger.info('stopped'); exit(0) })
      .catch((error: unknown) => { logger.error({ err: error }, 'shutdown failed'); exit(1) })
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))

  // Metrics first: a load balancer may send traffic as soon as the public port listens.
  const metricsAddress = admin === undefined || config.adminPort === undefined
    ? undefined
    : `${await listenOn(admin, config.adminHost, ['ADMIN_PORT', config.adminPort], closeStores)}/metrics`
  const address = await listenOn(app, config.host, ['PORT', config.port], closeStores, {
    listenTextResolver: (address) => `listening on ${address}`
  })
  // Operators' scripts wait for this line, whatever the log level.
  if (!logger.isLevelEnabled('info')) logger.child({}, { level: 'info' }).info(`listening on ${address}`)
  logger.info({ environment: config.environment, database: redactUrl(config.databaseUrl), rateLimitStore: limiter.name, address, metrics: metricsAddress }, 'petstore started')
}

/** Listens on HOST and the port the variable names, and gives the address; a port that cannot be had ends the start, naming both. */
async function listenOn (
  app: FastifyInstance, host: string, [variable, port]: [string, number], closeStores: () => Promise<void>,
  options: Pick<FastifyListenOptions, 'listenTextResolver'> = {}
): Promise<string> {
  try {
    return await app.listen({ host, port, ...options })
  } catch (error) {
    await closeStores()
    throw new ConfigError(`cannot listen on HOST=${host} ${variable}=${port}: ${error instanceof Error ? error.message : String(error)}`)
  }
}
