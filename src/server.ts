// The process: configuration, logger, storage, listen, graceful shutdown.
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, redactUrl, type Config } from './config.js'
import { openStorage } from './db/open.js'
import { openRateLimitStore } from './limits/open.js'
import { purgeExpiredIdempotencyKeys } from './pets/purge.js'

export async function serve (config: Config = loadConfig()): Promise<void> {
  const logger = pino({
    level: config.logLevel,
    // Tokens never reach the log, even if a serializer starts logging headers.
    redact: { paths: ['req.headers.authorization', 'req.headers["idempotency-key"]'], censor: '[redacted]' }
  })
  const storage = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize })
  // Every instance on one database shares its counters, and no other deployment's.
  const deployment = (await storage.secret('deployment')).subarray(0, 8).toString('hex')
  const limiter = await openRateLimitStore(config.redisUrl, logger, deployment)
  const app = await buildApp({ config, storage, limiter, logger })
  const stopPurging = purgeExpiredIdempotencyKeys(storage, Date.now, logger)

  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing requests in flight')
    // Stops accepting, waits for requests in flight, then closes the stores.
    const forced = setTimeout(() => {
      logger.error('requests in flight did not finish within 30 s; exiting')
      process.exit(1)
    }, 30_000)
    forced.unref()
    stopPurging()
    app.close()
      .then(async () => { await Promise.all([storage.close(), limiter.close()]) })
      .then(() => { logger.info('stopped'); logger.flush(); process.exit(0) })
      .catch((error: unknown) => { logger.error({ err: error }, 'shutdown failed'); process.exit(1) })
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))

  let address: string
  try {
    address = await app.listen({
      host: config.host,
      port: config.port,
      listenTextResolver: (address) => `listening on ${address}`
    })
  } catch (error) {
    await Promise.all([storage.close(), limiter.close()])
    throw new ConfigError(`cannot listen on HOST=${config.host} PORT=${config.port}: ${error instanceof Error ? error.message : String(error)}`)
  }
  // Operators' scripts wait for this line, whatever the log level.
  if (!logger.isLevelEnabled('info')) logger.child({}, { level: 'info' }).info(`listening on ${address}`)
  logger.info({ environment: config.environment, database: redactUrl(config.databaseUrl), rateLimitStore: limiter.name, address }, 'petstore started')
}
