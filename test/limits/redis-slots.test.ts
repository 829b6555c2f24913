// A key's requests in flight counted in Redis (src/limits/redis-slots.ts):
// exact across instances, each instance a store with its own connection, as
// in service; a dead instance's slots freed when their leases end, a live
// one's kept by renewing them. On the shared test Redis, with leases
// shortened to a second where a test waits for one to end.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import type { RedisStore } from '../../src/limits/redis-store.js'
import type { HitRequest, Release } from '../../src/limits/store.js'
import { pollUntil } from '../support/process.js'
import { openTestStore, type RedisKind } from '../support/redis.js'

let n = 0
/** A subject no other test or run uses. */
const subject = (what: string): string => `key:slots-${what}-${process.pid}-${Date.now()}-${n++}`

/** Two instances' stores on one Redis, sharing a namespace as instances of one deployment do. */
async function twoInstances (kind: RedisKind, leaseMs?: number): Promise<[RedisStore, RedisStore]> {
  const options = { namespace: 'slots-test', ...(leaseMs === undefined ? {} : { leaseMs }) }
  return [await openTestStore(kind, options), await openTestStore(kind, options)]
}

async function closeAll (stores: RedisStore[]): Promise<void> {
  await Promise.all(stores.map(async (store) => { await store.close() }))
}

for (const kind of ['single', 'cluster'] as const satisfies RedisKind[]) {
  describe(`requests in flight in Redis (${kind === 'single' ? 'one server' : 'a three-node cluster'})`, () => {
    it('When 50 requests of a key with a cap of 5 ask at once through two instances, then exactly 5 get a slot', async () => {
      // Arrange
      const stores = await twoInstances(kind)
      const who = subject('exact')

      try {
        // Act
        const answers = await Promise.all(Array.from({ length: 50 }, async (_, i) => await stores[i % 2]?.slots.take(who, 5)))

        // Assert
        const taken = answers.filter((release) => release !== undefined)
        assert.equal(taken.length, 5)
        for (const release of taken) release?.()
      } finally {
        await closeAll(stores)
      }
    })

    it('When two instances take and give back a key\'s slots as fast as they can, then never more than the cap are held at once, and the cap is reached', async (t) => {
      // Arrange: each instance runs 16 loops; a loop counts a slot as held from Redis's yes to just before its release is sent.
      const stores = await twoInstances(kind)
      const who = subject('race')
      const cap = 5
      let held = 0
      let most = 0
      let taken = 0
      const loop = async (store: RedisStore): Promise<void> => {
        for (let round = 0; round < 25; round++) {
          const release = await store.slots.take(who, cap)
          if (release === undefined) continue
          taken++
          most = Math.max(most, ++held)
          await delay(Math.random() * 3)
          held--
          release()
        }
      }

      try {
        // Act
        await Promise.all(stores.flatMap((store) => Array.from({ length: 16 }, async () => { await loop(store) })))

        // Assert
        t.diagnostic(`${taken} slots taken in 800 tries, at most ${most} held at once, cap ${cap}`)
        assert.equal(most, cap)
        assert.ok(taken > cap)
      } finally {
        await closeAll(stores)
      }
    })

    it('When a request asks for its limit and a slot in one step, then it is charged and holds the slot; once the slots are all held, the next is charged nothing; a refused one takes no slot', async () => {
      // Arrange: a cap of 2, a minute of 3 requests, over two instances.
      const [a, b] = await twoInstances(kind)
      const who = subject('holding')
      const request: HitRequest = { subject: who, windows: [{ window: 'minute', limit: 3 }], ban: { threshold: 1, seconds: 60 } }
      const remaining = (held: { decision: { windows: Array<{ remaining: number }> } } | undefined): number | undefined => held?.decision.windows[0]?.remaining

      try {
        // Act
        const first = await a.hitHolding(request, Date.now(), 2)
        const second = await b.hitHolding(request, Date.now(), 2)
        const whileFull = await a.hitHolding(request, Date.now(), 2)
        const plainWhileFull = await b.slots.take(who, 2)
        // Through the instance that gave the slot back: one connection is answered in order, two are not.
        first?.release()
        const third = await a.hitHolding(request, Date.now(), 2)
        second?.release()
        third?.release()
        const refused = await a.hitHolding(request, Date.now(), 2)
        const slotsAfterRefusal = await Promise.all([a.slots.take(who, 2), b.slots.take(who, 2)])

        // Assert
        assert.deepEqual([first, second].map((held) => held?.decision.outcome), ['allowed', 'allowed'])
        assert.deepEqual([remaining(first), remaining(second)], [2, 1])
        assert.equal(whileFull, undefined, 'every slot held: no answer')
        assert.equal(plainWhileFull, undefined, 'the two slots are held in Redis, where take sees them')
        assert.equal(third?.decision.outcome, 'allowed')
        assert.equal(remaining(third), 0, 'the request refused for its slots was charged nothing')
        assert.equal(refused?.decision.outcome, 'limited', 'the minute is spent')
        assert.ok(slotsAfterRefusal.every((release) => release !== undefined), 'the refused request took no slot')
        for (const release of slotsAfterRefusal) release?.()
      } finally {
        await closeAll([a, b])
      }
    })

    it('When an instance dies holding a key\'s slots, then the other gets them once their lease ends, and not before', async (t) => {
      // Arrange: leases of one second; the first instance holds every slot.
      const leaseMs = 1000
      const [dead, alive] = await twoInstances(kind, leaseMs)
      const who = subject('lease')
      // The leases begin between these two instants.
      const asked = performance.now()
      const held = await Promise.all(Array.from({ length: 3 }, async () => await dead.slots.take(who, 3)))
      assert.ok(held.every((release) => release !== undefined))
      const answered = performance.now()

      try {
        // Act: it goes without a word, as a killed process does: no release, no renewal.
        await dead.close()
        const whileLeased = await alive.slots.take(who, 3)
        const freedAt = await pollUntil(async () => (await alive.slots.take(who, 3)) === undefined ? undefined : performance.now(),
          { ms: leaseMs + 2000, every: 20, what: 'a slot after the lease' })
        // The three leases began a few milliseconds apart: the last has ended by a lease after the answers.
        await delay(Math.max(0, answered + leaseMs - performance.now()))
        const rest = await Promise.all([1, 2].map(async () => await alive.slots.take(who, 3)))

        // Assert
        t.diagnostic(`a dead instance's slots were free again ${(freedAt - answered).toFixed(0)} to ${(freedAt - asked).toFixed(0)} ms after it took them (lease ${leaseMs} ms)`)
        assert.equal(whileLeased, undefined)
        assert.ok(freedAt - asked >= leaseMs, `freed ${freedAt - asked} ms after the slots were asked for, before the lease ended`)
        assert.ok(freedAt - answered <= leaseMs + 300, `freed ${freedAt - answered} ms after the slots were taken, well past the lease`)
        assert.ok(rest.every((release) => release !== undefined), 'all three slots came free')
      } finally {
        await closeAll([alive])
      }
    })

    it('When a live instance holds a slot for longer than the lease, then its lease is renewed and the slot stays taken until it gives it back', async () => {
      // Arrange
      const leaseMs = 1000
      const [holder, other] = await twoInstances(kind, leaseMs)
      const who = subject('renew')
      const release: Release | undefined = await holder.slots.take(who, 1)
      assert.notEqual(release, undefined)

      try {
        // Act: two and a half leases, asking all along.
        const asked: Array<Release | undefined> = []
        for (const started = performance.now(); performance.now() - started < 2.5 * leaseMs;) {
          asked.push(await other.slots.take(who, 1))
          await delay(100)
        }
        release?.()
        const after = await other.slots.take(who, 1)

        // Assert
        assert.deepEqual(asked.filter((answer) => answer !== undefined), [], 'no slot while it was held')
        assert.notEqual(after, undefined, 'the slot given back is free at once')
      } finally {
        await closeAll([holder, other])
      }
    })
  })
}
