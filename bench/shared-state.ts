// What sharing the rate-limit counters costs one check, for each way the
// workers could share them (docs/WORKERS.md): a message to a keeper of the
// counters (a cluster primary, or the main thread), or the counters in a
// SharedArrayBuffer. One loop sends checks as a worker's requests would,
// IN_FLIGHT at a time, batched per turn of the event loop; the CPU of every
// process or thread is summed.
//
//   npm run build && node dist/bench/shared-state.js
import cluster from 'node:cluster'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { MemoryStore } from '../src/limits/memory-store.js'
import { createSharedLimits, SharedMemoryStore } from '../src/limits/shared-memory-store.js'
import type { Decision, HitRequest, RateLimitStore } from '../src/limits/store.js'

const CHECKS = 100_000
const REQUEST: HitRequest = { subject: 'key:123', windows: [{ window: 'minute', limit: 1e9 }, { window: 'day', limit: 1e9 }], ban: { threshold: 30, seconds: 900 } }
const NOW = 1_700_000_000_000

interface Batch { kind: 'checks', ids: number[] }

/** Sends CHECKS checks through `post`, `inFlight` at a time, one message per turn of the loop; CPU µs and wall µs per check. */
async function sender (post: (batch: Batch) => void, onAnswer: (handler: (decisions: Array<{ id: number }>) => void) => void, inFlight: number): Promise<{ cpu: number, wall: number }> {
  const waiting = new Map<number, () => void>()
  onAnswer((decisions) => { for (const { id } of decisions) { waiting.get(id)?.(); waiting.delete(id) } })
  let queued: number[] = []
  let next = 0
  const check = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      const id = next++
      waiting.set(id, resolve)
      queued.push(id)
      if (queued.length === 1) setImmediate(() => { const ids = queued; queued = []; post({ kind: 'checks', ids }) })
    })
  }
  const cpu = process.cpuUsage()
  const started = performance.now()
  let done = 0
  await Promise.all(Array.from({ length: inFlight }, async () => { while (done++ < CHECKS) await check() }))
  const used = process.cpuUsage(cpu)
  return { cpu: (used.user + used.system) / CHECKS, wall: (performance.now() - started) * 1000 / CHECKS }
}

/** The keeper's side: decides each check with the in-process store and answers the batch at once, each decision with its id (a request's headers need it). */
function keeper (store: RateLimitStore, answer: (decisions: Array<{ id: number, decision: Decision }>) => void): (batch: Batch) => void {
  return (batch) => {
    Promise.all(batch.ids.map(async (id) => ({ id, decision: await store.hit(REQUEST, NOW) }))).then(answer, (error: unknown) => { throw error })
  }
}

async function viaCluster (serialization: 'json' | 'advanced', inFlight: number): Promise<number> {
  cluster.setupPrimary({ serialization, args: ['--sender', String(inFlight)] })
  const child = cluster.fork()
  const store = new MemoryStore()
  const cpu = process.cpuUsage()
  const decide = keeper(store, (decisions) => { child.send(decisions) })
  return await new Promise((resolve) => {
    child.on('message', (message: Batch | { kind: 'done', cpu: number }) => {
      if (message.kind === 'checks') { decide(message); return }
      const used = process.cpuUsage(cpu)
      child.kill()
      resolve(message.cpu + (used.user + used.system) / CHECKS)
    })
  })
}

async function viaThread (inFlight: number): Promise<number> {
  // Threads share the process's CPU clock: it counts both sides.
  const worker = new Worker(new URL(import.meta.url), { workerData: { inFlight } })
  const store = new MemoryStore()
  const decide = keeper(store, (decisions) => { worker.postMessage(decisions) })
  const cpu = process.cpuUsage()
  return await new Promise((resolve) => {
    worker.on('message', (message: Batch | { kind: 'done' }) => {
      if (message.kind === 'checks') { decide(message); return }
      const used = process.cpuUsage(cpu)
      resolve((used.user + used.system) / CHECKS)
    })
  })
}

async function inMemory (store: RateLimitStore): Promise<number> {
  const cpu = process.cpuUsage()
  for (let i = 0; i < CHECKS; i++) await store.hit(REQUEST, NOW)
  const used = process.cpuUsage(cpu)
  await store.close()
  return (used.user + used.system) / CHECKS
}

if (cluster.isWorker) {
  const inFlight = Number(process.argv[process.argv.indexOf('--sender') + 1])
  const { cpu } = await sender((batch) => process.send?.(batch), (handler) => process.on('message', handler), inFlight)
  process.send?.({ kind: 'done', cpu })
} else if (!isMainThread) {
  const port = parentPort
  if (port === null) throw new Error('no parent port')
  await sender((batch) => { port.postMessage(batch) }, (handler) => port.on('message', handler), (workerData as { inFlight: number }).inFlight)
  port.postMessage({ kind: 'done' })
  port.close()
} else {
  const rows: string[] = []
  const format = (values: number[]): string => values.map((value) => value.toFixed(2)).join(' / ')
  const each = async (measure: (inFlight: number) => Promise<number>): Promise<string> => {
    const values: number[] = []
    for (const inFlight of [1, 8, 32]) values.push(await measure(inFlight))
    return format(values)
  }
  rows.push(`| cluster, counters in the primary, JSON messages | ${await each(async (n) => await viaCluster('json', n))} |`)
  rows.push(`| cluster, counters in the primary, advanced serialization | ${await each(async (n) => await viaCluster('advanced', n))} |`)
  rows.push(`| worker threads, counters in the main thread, postMessage | ${await each(viaThread)} |`)
  rows.push(`| in-process store (one process, nothing shared) | ${format([await inMemory(new MemoryStore())])} |`)
  rows.push(`| worker threads, counters in a SharedArrayBuffer | ${format([await inMemory(new SharedMemoryStore(createSharedLimits()))])} |`)
  console.log(`CPU µs per check (1 / 8 / 32 in flight), ${CHECKS} checks, Node.js ${process.versions.node}\n`)
  console.log('| how the counters are shared | CPU µs per check |\n|---|---|')
  for (const row of rows) console.log(row)
  // The stores' timers and the last worker are of no more use.
  process.exit(0)
}
