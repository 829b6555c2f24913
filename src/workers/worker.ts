// One worker thread: the public app on the shared port, its own database
// connection, the rate-limit counters every worker shares (docs/WORKERS.md).
// Its log goes to the main thread, and it stops when the main thread asks.
import { parentPort, threadId, workerData } from 'node:worker_threads'
import { WriteTurn } from '../db/sqlite/write-turns.js'
import { Degradation } from '../limits/degradation.js'
import { SharedMemoryStore } from '../limits/shared-memory-store.js'
import { createLog } from '../telemetry/log.js'
import { listenOn, openPublicService } from '../run/service.js'
import { shutdownTracing } from '../telemetry/tracing-hooks.js'
import { relaySink } from './log-relay.js'
import type { FromWorker, ToWorker, WorkerData } from './messages.js'

/** As the process gives its log and spans at shutdown (server.ts). */
const SPANS_FLUSH_MS = 2000

if (parentPort === null) throw new Error('workers/worker.js runs only as a worker thread')
const main = parentPort
const { config, port, limits, degradation, writeTurns, listenWhenTold, inFlight, column } = workerData as WorkerData
const tell = (message: FromWorker): void => { main.postMessage(message) }

const log = createLog({ level: config.logLevel, format: config.logFormat, worker: threadId }, relaySink(main))
const service = await openPublicService(config, log, {
  limiter: new SharedMemoryStore(limits),
  degradation: new Degradation(degradation),
  writeTurn: new WriteTurn(writeTurns, threadId),
  processMetrics: false,
  inFlight: { table: inFlight, column }
})
main.on('message', (message: ToWorker) => {
  if (message.kind === 'stop') {
    stop().catch((error: unknown) => {
      log.logger.error({ err: error }, 'worker: stop failed')
      process.exit(1)
    })
  } else if (message.kind === 'metrics') {
    (service.metrics?.registry.getMetricsAsJSON() ?? Promise.resolve([]))
      .then((metrics) => { tell({ kind: 'metrics', id: message.id, metrics }) })
      .catch((error: unknown) => { log.logger.warn({ err: error }, 'worker: metrics not read') })
  }
})
if (listenWhenTold) {
  const told = new Promise<void>((resolve) => {
    main.on('message', (message: ToWorker) => { if (message.kind === 'listen') resolve() })
  })
  tell({ kind: 'ready' })
  await told
}
const address = await listenOn(service.app, config.host, ['PORT', port], service.closeStores, {
  reusePort: true,
  // The main thread says `listening on …` once, for every worker.
  listenTextResolver: (address) => `worker ${threadId} accepting connections at ${address}`
})
// Its own lines first, then the main thread's `listening on …`.
await log.flush(0)
tell({ kind: 'listening', address, rateLimitStore: service.rateLimitStore })

async function stop (): Promise<void> {
  // Stops accepting, finishes the requests in flight, then closes the stores; the main thread keeps the time.
  await service.app.close()
  await service.closeStores()
  // Its spans too, within the time the process gives its log (server.ts).
  await Promise.all([log.flush(0), shutdownTracing(SPANS_FLUSH_MS)])
  // Whatever timer a library left behind, this thread is done.
  process.exit(0)
}
