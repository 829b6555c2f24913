// Requests in flight per key (src/limits/in-flight.ts): the cap, the wait
// for a slot, a dead worker's slots given back, across real worker threads.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { InFlight, createInFlightTable, releaseColumn } from '../../src/limits/in-flight.js'
import type { InFlightMessage, InFlightOrders } from './in-flight-worker.js'

const WORKER = new URL('./in-flight-worker.js', import.meta.url)

describe('requests in flight per key', () => {
  it('When a key holds its cap, then the next request waits and gets the first slot given back', async () => {
    // Arrange
    const inFlight = new InFlight(createInFlightTable({ columns: 1 }), 0)
    const held = await Promise.all([1, 2, 3].map(async () => await inFlight.acquire(7, 3, 0)))
    assert.ok(held.every((release) => release !== undefined))

    // Act
    const waiting = inFlight.acquire(7, 3, 5_000)
    held[0]?.()
    const next = await waiting

    // Assert
    assert.notEqual(next, undefined)
    assert.equal(inFlight.inFlight(7), 3)
  })

  it('When no slot is given back within the wait, then the request gets none, and other keys are not affected', async () => {
    // Arrange
    const inFlight = new InFlight(createInFlightTable({ columns: 1 }), 0)
    await inFlight.acquire(7, 1, 0)

    // Act
    const refused = await inFlight.acquire(7, 1, 20)
    const other = await inFlight.acquire(8, 1, 0)

    // Assert
    assert.equal(refused, undefined)
    assert.notEqual(other, undefined)
  })

  it('When as many requests as its cap already wait for a key\'s slot, then one more is refused at once, and the waiters still get the slots given back', async () => {
    // Arrange: a cap of 2, held, and two requests waiting.
    const inFlight = new InFlight(createInFlightTable({ columns: 1 }), 0)
    const held = await Promise.all([1, 2].map(async () => await inFlight.acquire(7, 2, 0)))
    const waiting = [inFlight.acquire(7, 2, 5_000), inFlight.acquire(7, 2, 5_000)]

    // Act
    const started = performance.now()
    const extra = await inFlight.acquire(7, 2, 5_000)
    const answeredAfter = performance.now() - started
    for (const release of held) release?.()
    const waited = await Promise.all(waiting)

    // Assert
    assert.equal(extra, undefined)
    assert.ok(answeredAfter < 2_500, `refused without waiting for its 5 s (${Math.round(answeredAfter)} ms)`)
    assert.ok(waited.every((release) => release !== undefined), 'both waiters got a slot')
    assert.equal(inFlight.inFlight(7), 2)
  })

  it('When a waiter ends, then another request of the key may wait in its place', async () => {
    // Arrange: a cap of 1, held; one request waits 20 ms and gives up.
    const inFlight = new InFlight(createInFlightTable({ columns: 1 }), 0)
    const held = await inFlight.acquire(7, 1, 0)
    assert.equal(await inFlight.acquire(7, 1, 20), undefined)

    // Act
    const waiting = inFlight.acquire(7, 1, 5_000)
    held?.()

    // Assert
    assert.notEqual(await waiting, undefined, 'it waited, and got the slot given back')
  })

  it('When a slot is given back twice, then it counts once', async () => {
    // Arrange
    const inFlight = new InFlight(createInFlightTable({ columns: 1 }), 0)
    const first = await inFlight.acquire(7, 2, 0)
    await inFlight.acquire(7, 2, 0)

    // Act
    first?.()
    first?.()

    // Assert
    assert.equal(inFlight.inFlight(7), 1)
  })

  it('When a worker ends holding slots, then releasing its column frees them and wakes a request waiting in another', async () => {
    // Arrange: two workers' columns over one table.
    const table = createInFlightTable({ columns: 2 })
    const dead = new InFlight(table, 0)
    const alive = new InFlight(table, 1)
    await dead.acquire(7, 2, 0)
    await dead.acquire(7, 2, 0)
    const waiting = alive.acquire(7, 2, 5_000)

    // Act
    const released = releaseColumn(table, 0)

    // Assert
    assert.equal(released, 2)
    assert.notEqual(await waiting, undefined)
    assert.equal(alive.inFlight(7), 1)
  })

  it('When the table has no room for another key, then that key goes uncapped and it is told once a time', async () => {
    // Arrange: one slot, taken by key 1.
    let full = 0
    const inFlight = new InFlight(createInFlightTable({ columns: 1, slots: 1 }), 0, () => { full++ })
    await inFlight.acquire(1, 1, 0)

    // Act
    const uncapped = await Promise.all([1, 2, 3].map(async () => await inFlight.acquire(2, 1, 0)))

    // Assert
    assert.ok(uncapped.every((release) => release !== undefined))
    assert.equal(full, 3)
    assert.equal(await inFlight.acquire(1, 1, 0), undefined)
  })

  it('When 4 threads take one key\'s slots as fast as they can, then never more than the cap are held at once, and the cap is reached', async () => {
    // Arrange
    const cap = 5
    const table = createInFlightTable({ columns: 4 })
    const held = new SharedArrayBuffer(8)
    const gate = new SharedArrayBuffer(4)
    const workers = Array.from({ length: 4 }, (_, column) => {
      const orders: InFlightOrders = { table, column, key: 42, cap, rounds: 2_000, parallel: 8, held, gate }
      return new Worker(WORKER, { workerData: orders })
    })
    const messages = workers.map((worker) => {
      const failed = new Promise<never>((_resolve, reject) => { worker.once('error', reject) })
      const of = async (type: InFlightMessage['type']): Promise<InFlightMessage> => await Promise.race([failed, new Promise<InFlightMessage>((resolve) => {
        const listener = (message: InFlightMessage): void => { if (message.type === type) { worker.off('message', listener); resolve(message) } }
        worker.on('message', listener)
      })])
      return { ready: of('ready'), done: of('done') }
    })
    await Promise.all(messages.map(async ({ ready }) => await ready))

    // Act
    Atomics.store(new Int32Array(gate), 0, 1)
    Atomics.notify(new Int32Array(gate), 0)
    const done = await Promise.all(messages.map(async ({ done }) => await done))
    await Promise.all(workers.map(async (worker) => { if (worker.threadId !== -1) await once(worker, 'exit') }))

    // Assert
    const most = Atomics.load(new Int32Array(held), 1)
    const taken = done.reduce((sum, message) => sum + (message.type === 'done' ? message.taken : 0), 0)
    assert.equal(most, cap, `at most ${most} held at once`)
    assert.ok(taken > 0)
    assert.equal(new InFlight(table, 0).inFlight(42), 0)
  })
})
