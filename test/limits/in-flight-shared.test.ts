// Requests in flight across instances (src/limits/in-flight.ts with the
// slots of src/limits/redis-slots.ts): each instance its own table and its
// own store, on the shared test Redis. How a request over the cap waits: for
// a release in its own process, else until its wait ends, then once more.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { InFlight, createInFlightTable } from '../../src/limits/in-flight.js'
import type { RedisStore } from '../../src/limits/redis-store.js'
import type { SharedSlots } from '../../src/limits/store.js'
import { openTestStore } from '../support/redis.js'

let n = 0
/** A key id no other test or run uses: the table and Redis know keys by id. */
const keyId = (): number => (process.pid * 1000 + (Date.now() % 1000) * 10 + n++) % 2_000_000_000

/** One instance: its table, its store, and how many times it asked Redis for a slot. */
interface Instance {
  inFlight: InFlight
  store: RedisStore
  asked: () => number
}

async function instance (): Promise<Instance> {
  const store = await openTestStore('single', { namespace: `in-flight-shared-${process.pid}` })
  let asked = 0
  const counted: SharedSlots = {
    take: async (subject, cap, signal) => { asked++; return await store.slots.take(subject, cap, signal) },
    hold: (subject) => store.slots.hold(subject)
  }
  return { inFlight: new InFlight(createInFlightTable({ columns: 1 }), 0, () => {}, counted), store, asked: () => asked }
}

async function closeAll (instances: Instance[]): Promise<void> {
  await Promise.all(instances.map(async ({ store }) => { await store.close() }))
}

describe('requests in flight across instances', () => {
  it('When another instance holds every slot of a key, then a request here waits out its wait and gets none, asking Redis twice, and keeps no slot here', async (t) => {
    // Arrange
    const [a, b] = [await instance(), await instance()]
    const key = keyId()
    const held = await Promise.all([1, 2].map(async () => await a.inFlight.acquire(key, 2, 0)))
    assert.ok(held.every((release) => release !== undefined))

    try {
      // Act
      const started = performance.now()
      const refused = await b.inFlight.acquire(key, 2, 250)
      const waited = performance.now() - started

      // Assert
      t.diagnostic(`refused after ${waited.toFixed(0)} ms, having asked Redis ${b.asked()} times`)
      assert.equal(refused, undefined)
      assert.ok(waited >= 250, `refused after ${waited} ms`)
      assert.equal(b.asked(), 2, 'once at first, once when the wait ended')
      assert.equal(b.inFlight.inFlight(key), 0)
      assert.equal(a.inFlight.inFlight(key), 2)
    } finally {
      for (const release of held) release?.()
      await closeAll([a, b])
    }
  })

  it('When every slot is taken and one is given back in this instance, then a request waiting here gets it at once', async (t) => {
    // Arrange: one slot held in each instance.
    const [a, b] = [await instance(), await instance()]
    const key = keyId()
    const there = await a.inFlight.acquire(key, 2, 0)
    const here = await b.inFlight.acquire(key, 2, 0)
    assert.ok(there !== undefined && here !== undefined)

    try {
      // Act
      const started = performance.now()
      const waiting = b.inFlight.acquire(key, 2, 5_000)
      await delay(50)
      here()
      const next = await waiting
      const waited = performance.now() - started

      // Assert
      t.diagnostic(`got the slot after ${waited.toFixed(0)} ms of a 5,000 ms wait`)
      assert.notEqual(next, undefined)
      assert.ok(waited < 1_000, `waited ${waited} ms`)
      next?.()
    } finally {
      there()
      await closeAll([a, b])
    }
  })

  it('When every slot is taken and one is given back in another instance, then a request waiting here gets it when its wait ends', async (t) => {
    // Arrange
    const [a, b] = [await instance(), await instance()]
    const key = keyId()
    const held = await Promise.all([1, 2].map(async () => await a.inFlight.acquire(key, 2, 0)))

    try {
      // Act
      const started = performance.now()
      const waiting = b.inFlight.acquire(key, 2, 300)
      await delay(50)
      held[0]?.()
      const next = await waiting
      const waited = performance.now() - started

      // Assert
      t.diagnostic(`got the slot after ${waited.toFixed(0)} ms, at the end of its 300 ms wait`)
      assert.notEqual(next, undefined)
      // Not at the release (50 ms) but at the wait's end; a timer can fire a
      // little before 300 ms by this clock, since libuv's loop time is cached.
      assert.ok(waited >= 250, `got it after ${waited} ms`)
      next?.()
    } finally {
      for (const release of held) release?.()
      await closeAll([a, b])
    }
  })
})
