// A worker thread for the shared-memory store's tests: it wraps the table it
// is given and hammers it, or stops for good while holding a shard's lock.
import { parentPort, workerData } from 'node:worker_threads'
import { SharedMemoryStore, type SharedLimits } from '../../src/limits/shared-memory-store.js'
import type { BanPolicy, WindowLimit } from '../../src/limits/store.js'

export interface WorkerOrders {
  table: SharedLimits
  /** Hammer: every subject, `rounds` times over. Hold: one hit that never ends, its shard locked. */
  mode: 'hammer' | 'hold'
  subjects: string[]
  rounds: number
  windows: WindowLimit[]
  ban: BanPolicy | undefined
  now: number
  /** The hammering starts when the test sets it to 1, so that every worker starts at once. */
  gate: SharedArrayBuffer
}

export interface Tally {
  allowed: number
  limited: number
  banned: number
  bansEarned: number
  /** What each admitted request was told remained in its last window. */
  remaining: number[]
}

export type WorkerMessage = { type: 'ready' } | { type: 'holding' } | { type: 'done', tally: Tally }

const orders = workerData as WorkerOrders
const port = parentPort
if (port === null) throw new Error('run as a worker thread')
const send = (message: WorkerMessage): void => { port.postMessage(message) }

if (orders.mode === 'hold') {
  // The clock is read with the shard's lock held: stop there, for good, until terminated.
  const never = new Int32Array(new SharedArrayBuffer(4))
  const store = new SharedMemoryStore(orders.table, () => {
    send({ type: 'holding' })
    Atomics.wait(never, 0, 0)
    return orders.now
  })
  await store.hit({ subject: orders.subjects[0] ?? '', windows: orders.windows, ban: orders.ban }, orders.now)
} else {
  const store = new SharedMemoryStore(orders.table, () => orders.now)
  const gate = new Int32Array(orders.gate)
  send({ type: 'ready' })
  Atomics.wait(gate, 0, 0)
  const tally: Tally = { allowed: 0, limited: 0, banned: 0, bansEarned: 0, remaining: [] }
  for (let round = 0; round < orders.rounds; round++) {
    for (const subject of orders.subjects) {
      const decision = await store.hit({ subject, windows: orders.windows, ban: orders.ban }, orders.now)
      tally[decision.outcome]++
      if (decision.outcome === 'allowed') tally.remaining.push(decision.windows.at(-1)?.remaining ?? -1)
      if (decision.outcome === 'limited' && decision.banEarnedUntil !== undefined) tally.bansEarned++
    }
  }
  send({ type: 'done', tally })
}
