// The shared-memory store under several worker threads at once, each with
// its own store over one table, as the service's workers are.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { createSharedLimits, releaseLocksHeldBy, SharedMemoryStore, type SharedLimits } from '../../src/limits/shared-memory-store.js'
import type { BanPolicy, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import type { Tally, WorkerMessage, WorkerOrders } from './shared-memory-worker.js'

const T0 = CLOCK_START
const WORKER = new URL('./shared-memory-worker.js', import.meta.url)

interface Started {
  worker: Worker
  /** Read now: Node reads it as -1 once the worker has exited. */
  threadId: number
  /** The first message of the kind given. */
  next: (type: WorkerMessage['type']) => Promise<WorkerMessage>
}

function start (orders: Omit<WorkerOrders, 'gate' | 'now'> & { gate?: SharedArrayBuffer }): Started {
  const worker = new Worker(WORKER, { workerData: { now: T0, gate: new SharedArrayBuffer(4), ...orders } })
  const failed = new Promise<never>((_resolve, reject) => { worker.once('error', reject) })
  failed.catch(() => {})
  const next = async (type: WorkerMessage['type']): Promise<WorkerMessage> => await Promise.race([failed, new Promise<WorkerMessage>((resolve) => {
    const listener = (message: WorkerMessage): void => { if (message.type === type) { worker.off('message', listener); resolve(message) } }
    worker.on('message', listener)
  })])
  return { worker, threadId: worker.threadId, next }
}

/** Starts `count` workers hammering, all at once, and adds up what they were told. */
async function hammer (count: number, orders: Omit<WorkerOrders, 'gate' | 'now' | 'mode'>): Promise<Tally> {
  const gate = new SharedArrayBuffer(4)
  const workers = Array.from({ length: count }, () => start({ ...orders, mode: 'hammer', gate }))
  const done = workers.map(async ({ next }) => await next('done'))
  await Promise.all(workers.map(async ({ next }) => await next('ready')))
  Atomics.store(new Int32Array(gate), 0, 1)
  Atomics.notify(new Int32Array(gate), 0)
  const tallies = (await Promise.all(done)).map((message) => message.type === 'done' ? message.tally : assert.fail('no tally'))
  await Promise.all(workers.map(async ({ worker }) => { if (worker.threadId !== -1) await once(worker, 'exit') }))
  return tallies.reduce((sum, t) => ({
    allowed: sum.allowed + t.allowed,
    limited: sum.limited + t.limited,
    banned: sum.banned + t.banned,
    bansEarned: sum.bansEarned + t.bansEarned,
    remaining: [...sum.remaining, ...t.remaining]
  }))
}

async function used (table: SharedLimits, subject: string, windows: WindowLimit[]): Promise<number[]> {
  const decision = await new SharedMemoryStore(table, () => T0).hit({ subject, windows, ban: undefined, charge: false }, T0)
  return decision.windows.map((w) => w.limit - w.remaining)
}

describe('the shared-memory store across worker threads', () => {
  it('When 4 threads race for one subject\'s units, then exactly the limit is admitted, each with a count of its own, and the ban is earned once, at the threshold', async () => {
    // Arrange: the day binds; 40,000 requests for 20,000 units, a ban at 5,000 refusals.
    const table = createSharedLimits({ maxSubjects: 1000 })
    const windows: WindowLimit[] = [{ window: 'minute', limit: 1_000_000 }, { window: 'day', limit: 20_000 }]
    const ban: BanPolicy = { threshold: 5000, seconds: 60 }

    // Act
    const tally = await hammer(4, { table, subjects: ['key:race'], rounds: 10_000, windows, ban })

    // Assert
    assert.deepEqual([tally.allowed, tally.limited, tally.bansEarned, tally.banned], [20_000, 5000, 1, 15_000])
    assert.deepEqual(tally.remaining.sort((a, b) => a - b), Array.from({ length: 20_000 }, (_, i) => i), 'no two admitted requests saw the same count')
    assert.deepEqual(await used(table, 'key:race', windows), [20_000, 20_000])
  })

  it('When 4 threads charge many subjects at once, then every subject holds every charge: none is lost', async () => {
    // Arrange: short subjects and ones kept by their digest, in few shards, so that threads meet in each.
    const table = createSharedLimits({ maxSubjects: 256 })
    const subjects = Array.from({ length: 100 }, (_, i) => i % 2 === 0 ? `addr:10.0.${i}.1` : `key:${'k'.repeat(60)}-${i}`)
    const windows: WindowLimit[] = [{ window: 'minute', limit: 1_000_000 }, { window: 'day', limit: 1_000_000 }]

    // Act
    const tally = await hammer(4, { table, subjects, rounds: 200, windows, ban: undefined })

    // Assert
    assert.equal(tally.allowed, 4 * 200 * subjects.length)
    for (const subject of subjects) assert.deepEqual(await used(table, subject, windows), [800, 800], subject)
  })

  it('When a worker is terminated while it holds a shard\'s lock, then releasing its locks on exit lets the others go on', async () => {
    // Arrange: one worker stops for good inside a hit, its shard locked; another then needs that shard.
    const table = createSharedLimits({ maxSubjects: 64 })
    const windows: WindowLimit[] = [{ window: 'minute', limit: 1000 }]
    const holder = start({ table, mode: 'hold', subjects: ['key:held'], rounds: 1, windows, ban: undefined })
    await holder.next('holding')
    const gate = new SharedArrayBuffer(4)
    Atomics.store(new Int32Array(gate), 0, 1)
    const other = start({ table, mode: 'hammer', subjects: ['key:held'], rounds: 100, windows, ban: undefined, gate })
    const otherDone = other.next('done')
    let released = -1
    let releasedForAnother = -1
    holder.worker.once('exit', () => {
      releasedForAnother = releaseLocksHeldBy(table, holder.threadId + 1000)
      released = releaseLocksHeldBy(table, holder.threadId)
    })

    // Act
    await other.next('ready')
    await holder.worker.terminate()
    const done = await otherDone

    // Assert
    assert.equal(releasedForAnother, 0, 'a lock is released only for the thread that holds it')
    assert.equal(released, 1, 'the dead worker held one lock')
    assert.equal(done.type === 'done' ? done.tally.allowed : 0, 100)
    assert.deepEqual(await used(table, 'key:held', windows), [100])
  })
})
