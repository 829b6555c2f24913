// WORKERS > 1 (docs/WORKERS.md): the main thread starts that many worker
// threads, each serving the public port (workers/worker.ts), and keeps for
// itself what must be one: the rate-limit counters' memory, stdout, the admin
// listener with /metrics adding up every worker's counts, the hourly purge, the
// webhook dispatcher,
// and the stop. A worker that dies is replaced; the others go on serving.
import { createServer } from 'node:net'
import { Worker } from 'node:worker_threads'
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client'
import type { Config } from '../config.js'
import { ConfigError } from '../config.js'
import { DeadlineError, within } from '../deadline.js'
import { openStorage } from '../db/open.js'
import { createWriteTurns, releaseTurnOf } from '../db/sqlite/write-turns.js'
import { Degradation } from '../limits/degradation.js'
import { createInFlightTable, releaseColumn } from '../limits/in-flight.js'
import { createSharedLimits, releaseLocksHeldBy } from '../limits/shared-memory-store.js'
import type { ServiceLog } from '../telemetry/log.js'
import { createMetrics } from '../telemetry/metrics.js'
import { purgeExpiredIdempotencyKeys } from '../pets/purge.js'
import { announceStart, startAdmin, startDispatcher } from '../run/service.js'
import type { FromWorker, ToWorker, WorkerData } from './messages.js'

const THREAD = new URL('./thread.js', import.meta.url)
/**
 * Listens on the port the workers will share (PORT=0: any free one) alone,
 * without reusePort, so that it is refused if anything holds it, and held
 * until the workers are ready to listen on it: else another process of this
 * user could join them and split the traffic and limits (docs/WORKERS.md,
 * "One port, one service"). Released, the port is open to others only for
 * the moment the workers take to listen.
 */
async function holdPort (host: string, port: number): Promise<{ port: number, release: () => Promise<void> }> {
  // A probe or a client that connects meanwhile is closed at once: nothing
  // here can answer it, and close() below waits for every connection to end.
  const probe = createServer({ pauseOnConnect: true }, (socket) => { socket.destroy() })
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject)
      probe.listen({ host, port }, resolve)
    })
  } catch (error) {
    throw new ConfigError(`cannot listen on HOST=${host} PORT=${port}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const address = probe.address()
  const release = async (): Promise<void> => {
    if (probe.listening) await new Promise((resolve) => probe.close(resolve))
  }
  if (address === null || typeof address === 'string') {
    await release()
    throw new ConfigError(`cannot listen on HOST=${host} PORT=${port}: no port given`)
  }
  return { port: address.port, release }
}

/**
 * Workers not all listening by then fail the start, with a line that says so,
 * rather than leave a process that never serves (a store that does not answer,
 * a worker that hangs).
 */
const WORKERS_START_MS = 60_000
/** A worker that answers no metrics request within this is left out of that scrape. */
const METRICS_WAIT_MS = 2000
/** A worker that dies is replaced after this, doubled for each that died soon after its start, up to the most. */
const FIRST_RESTART_MS = 100
const MOST_RESTART_MS = 10_000
/** A worker that lived this long is taken to have started well: the next restart waits the least again. */
const HEALTHY_AFTER_MS = 30_000

type Listening = Extract<FromWorker, { kind: 'listening' }>
type ThreadMetrics = Array<MetricObjectWithValues<MetricValue<string>>>

interface Running {
  worker: Worker
  startedAt: number
  pendingMetrics: Map<number, (metrics: ThreadMetrics) => void>
}

export interface Workers {
  /** Stops every worker (each finishes its requests in flight), then the admin listener and the store. */
  stop: () => Promise<void>
  /** The worker threads running now. */
  threads: () => Worker[]
}

export async function startWorkers (config: Config, log: ServiceLog): Promise<Workers> {
  const { logger } = log
  // The main thread's own connection: the admin API's, and the purge's. It migrates the store before any worker opens it.
  const storage = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize })
  // With Redis too: while it is unreachable, the workers limit together here, as one instance.
  const limits = createSharedLimits()
  // And one worker finding Redis away, or back, moves them all.
  const degradation = new Degradation().buffer
  const writeTurns = createWriteTurns()
  // One column per worker, taken over by the worker that replaces it.
  const inFlight = createInFlightTable({ columns: config.workers })
  const running = new Set<Running>()
  let stopping = false
  let restartMs = FIRST_RESTART_MS
  let nextMetricsId = 0
  /** The public port every worker listens on, and a replacement too. */
  let port = config.port

  /**
   * Starts one worker; resolves once it listens, rejects if it fails before.
   * Given `listen`, the worker says when it is ready, and listens once `listen` resolves.
   */
  const startOne = async (column: number, listen?: { ready: () => void, when: Promise<void> }): Promise<Listening> => {
    const data: WorkerData = { config, port, limits, degradation, writeTurns, inFlight, column, listenWhenTold: listen !== undefined }
    const worker = new Worker(THREAD, { workerData: data })
    // Read now: an exited worker's threadId is -1.
    const { threadId } = worker
    const entry: Running = { worker, startedAt: Date.now(), pendingMetrics: new Map() }
    running.add(entry)
    return await new Promise<Listening>((resolve, reject) => {
      let listening = false
      worker.on('message', (message: FromWorker) => {
        if (message.kind === 'log') log.write(message.text)
        else if (message.kind === 'ready' && listen !== undefined) {
          listen.ready()
          listen.when.then(() => {
            const go: ToWorker = { kind: 'listen' }
            worker.postMessage(go)
          }).catch((error: unknown) => { reject(error) })
        } else if (message.kind === 'listening') {
          listening = true
          resolve(message)
        } else if (message.kind === 'metrics') {
          entry.pendingMetrics.get(message.id)?.(message.metrics)
          entry.pendingMetrics.delete(message.id)
        }
      })
      worker.on('error', (error) => {
        if (listening) logger.error({ err: error, worker: threadId }, 'worker failed')
        else reject(error)
      })
      worker.on('exit', (code) => {
        running.delete(entry)
        // A lock word its thread held when it ended would stop every other worker at that shard.
        releaseLocksHeldBy(limits, threadId)
        releaseTurnOf(writeTurns, threadId)
        // Its requests in flight ended with it; the next worker in its column starts from none.
        releaseColumn(inFlight, column)
        for (const answer of entry.pendingMetrics.values()) answer([])
        if (!listening) {
          reject(new Error(`worker exited with code ${code} before listening`))
          return
        }
        if (stopping) return
        const lived = Date.now() - entry.startedAt
        restartMs = lived >= HEALTHY_AFTER_MS ? FIRST_RESTART_MS : Math.min(restartMs * 2, MOST_RESTART_MS)
        logger.error({ worker: threadId, code }, `worker ${threadId} stopped (exit code ${code}): starting another in ${restartMs} ms`)
        setTimeout(() => {
          if (stopping) return
          startOne(column).catch((error: unknown) => { logger.error({ err: error }, 'a replacement worker failed to start') })
        }, restartMs).unref()
      })
    })
  }

  const askMetrics = async ({ worker, pendingMetrics }: Running): Promise<ThreadMetrics> => {
    const id = nextMetricsId++
    return await new Promise<ThreadMetrics>((resolve) => {
      const timer = setTimeout(() => { pendingMetrics.delete(id); resolve([]) }, METRICS_WAIT_MS)
      pendingMetrics.set(id, (metrics) => { clearTimeout(timer); resolve(metrics) })
      const message: ToWorker = { kind: 'metrics', id }
      worker.postMessage(message)
    })
  }

  const own = config.adminPort === undefined
    ? undefined
    : createMetrics({ poolUse: () => storage.poolUse(), droppedLogLines: log.dropped, processMetrics: true })
  const metrics = own === undefined
    ? undefined
    : {
        registry: {
          contentType: own.registry.contentType,
          async metrics () {
            const each = await Promise.all([own.registry.getMetricsAsJSON(), ...[...running].map(askMetrics)])
            return await AggregatorRegistry.aggregate(each).metrics()
          }
        }
      }
  const closeStore = async (): Promise<void> => { await storage.close() }
  const { admin, adminAddress } = await startAdmin(config, logger, { storage, metrics, closeStores: closeStore })

  const stopWorkers = async (): Promise<void> => {
    stopping = true
    await Promise.all([...running].map(async ({ worker }) => {
      const exited = new Promise<void>((resolve) => { worker.once('exit', () => { resolve() }) })
      const message: ToWorker = { kind: 'stop' }
      worker.postMessage(message)
      await exited
    }))
  }

  let first: Listening
  const held = await holdPort(config.host, config.port).catch(async (error: unknown) => {
    await Promise.all([admin?.close(), closeStore()])
    throw error
  })
  // Every worker at once, each opening its stores; the port is let go when all are ready to take it.
  let ready = 0
  try {
    port = held.port
    let letGo = (): void => {}
    const when = new Promise<void>((resolve) => { letGo = resolve })
    const listen = {
      ready: () => {
        if (++ready === config.workers) held.release().then(letGo).catch((error: unknown) => { logger.error({ err: error }, 'the port was not let go') })
      },
      when
    }
    const all = await within(WORKERS_START_MS, async () => await Promise.all(Array.from({ length: config.workers }, async (_, column) => await startOne(column, listen))))
    first = all[0] as Listening
  } catch (error) {
    // Nothing was served yet: a worker still opening its stores could not hear a stop.
    stopping = true
    await Promise.all([...running].map(async ({ worker }) => await worker.terminate()))
    await Promise.all([held.release(), admin?.close(), closeStore()])
    if (error instanceof ConfigError) throw error
    const why = error instanceof DeadlineError
      ? `${ready} of ${config.workers} workers were ready to listen after ${WORKERS_START_MS / 1000} s`
      : error instanceof Error ? error.message : String(error)
    throw new ConfigError(`cannot start WORKERS=${config.workers}: ${why}`)
  }
  const stopPurging = purgeExpiredIdempotencyKeys(storage, Date.now, logger)
  // One dispatcher for every worker: the workers write events, this thread delivers them.
  const dispatcher = startDispatcher(config, storage, logger, own)
  // Operators' scripts wait for this line, whatever the log level.
  const listening = logger.isLevelEnabled('info') ? logger : logger.child({}, { level: 'info' })
  listening.info(`listening on ${first.address}`)
  announceStart(config, logger, { address: first.address, adminAddress, rateLimitStore: first.rateLimitStore, workers: config.workers })

  return {
    async stop () {
      stopPurging()
      await Promise.all([stopWorkers(), admin?.close(), dispatcher.stop()])
      await closeStore()
    },
    threads: () => [...running].map(({ worker }) => worker)
  }
}
