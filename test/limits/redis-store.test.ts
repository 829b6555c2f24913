import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import type { BanPolicy, HitRequest } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { keysMatching, openTestClient, openTestStore, redisTime, type RedisKind } from '../support/redis.js'
import { rateLimitStoreContract } from './store-contract.js'

// The contract steps across minutes and bans, which on Redis's own clock
// would take minutes of waiting: these stores decide on the `now` each test
// gives them. Everything else is as in service, the script included; the
// tests below check the store on Redis's clock.
rateLimitStoreContract('redis', async () => await openTestStore('single', { clock: 'caller' }))
rateLimitStoreContract('redis cluster', async () => await openTestStore('cluster', { clock: 'caller' }))

const T0 = CLOCK_START
let n = 0
/** A subject no other test or run uses. */
const subject = (what: string): string => `key:redis-${what}-${process.pid}-${Date.now()}-${n++}`

for (const kind of ['single', 'cluster'] as const satisfies RedisKind[]) {
  describe(`the Redis store (${kind === 'single' ? 'one server' : 'a three-node cluster'})`, () => {
    it('When a subject has been counted, refused and banned, then every key the store wrote expires', async () => {
      // Arrange
      const store = await openTestStore(kind)
      const client = await openTestClient(kind)
      const who = subject('ttl')
      const request: HitRequest = { subject: who, windows: [{ window: 'minute', limit: 1 }, { window: 'day', limit: 10 }], ban: { threshold: 2, seconds: 60 } }

      try {
        // Act: one admitted, two refused (the second earns the ban), one banned.
        const outcomes = []
        for (let i = 0; i < 4; i++) outcomes.push((await store.hit(request, Date.now())).outcome)

        // Assert: the subject's four keys exist, and no key of the store's, this subject's or any other's, lives for ever.
        assert.deepEqual(outcomes, ['allowed', 'limited', 'limited', 'banned'])
        const own = (await keysMatching(client, `petstore:{${who}}:*`)).map(({ key }) => key).sort()
        assert.deepEqual(own, ['ban', 'day', 'minute', 'refusals'].map((name) => `petstore:{${who}}:${name}`))
        const all = await keysMatching(client, 'petstore:*')
        const ttls = await Promise.all(all.map(async ({ key, server }) => [key, await server.pttl(key)] as const))
        assert.deepEqual(ttls.filter(([, ttl]) => ttl < 0), [], 'keys without an expiry')
        for (const [key, ttl] of ttls.filter(([key]) => key.startsWith(`petstore:{${who}}:`))) {
          const most = key.endsWith(':day') ? 86_400_000 + 1000 : 60_000 + 1000
          assert.ok(ttl > 0 && ttl <= most, `${key} expires in ${ttl} ms, past its window`)
        }
      } finally {
        client.disconnect()
        await store.close()
      }
    })

    it('When many requests from two instances race for the last units, then exactly the limit is admitted across both', async (t) => {
      // Arrange: two stores, two connections, as two instances of the service have.
      const [a, b] = [await openTestStore(kind, { clock: 'caller' }), await openTestStore(kind, { clock: 'caller' })]
      const request: HitRequest = { subject: subject('race'), windows: [{ window: 'minute', limit: 100 }, { window: 'day', limit: 1000 }], ban: undefined }

      try {
        // Act
        const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? a : b).hit(request, T0)))

        // Assert
        const admitted = decisions.filter((d) => d.outcome === 'allowed')
        t.diagnostic(`admitted ${admitted.length} of 400 with a limit of 100`)
        assert.equal(admitted.length, 100)
        assert.deepEqual(admitted.map((d) => d.windows[0]?.remaining).sort((x = 0, y = 0) => x - y), Array.from({ length: 100 }, (_, i) => i),
          'each admitted request saw a count of its own')
        const next = await a.hit({ ...request, windows: [{ window: 'minute', limit: 1000 }, { window: 'day', limit: 1000 }] }, T0)
        assert.equal(next.windows[1]?.remaining, 899, 'the day window was charged for the admitted requests only')
      } finally {
        await Promise.all([a.close(), b.close()])
      }
    })

    it('When one instance bans a key, then the other refuses it as banned, until the same end', async () => {
      // Arrange
      const [a, b] = [await openTestStore(kind, { clock: 'caller' }), await openTestStore(kind, { clock: 'caller' })]
      const ban: BanPolicy = { threshold: 2, seconds: 60 }
      const request: HitRequest = { subject: subject('ban'), windows: [{ window: 'minute', limit: 1 }], ban }

      try {
        // Act: `a` admits one, then refuses two, the second of which earns the ban.
        for (let i = 0; i < 3; i++) await a.hit(request, T0 + i)
        const atB = await b.hit(request, T0 + 10)
        const atBAfter = await b.hit(request, T0 + 2 + 60_000)

        // Assert
        assert.equal(atB.outcome, 'banned')
        assert.equal(atB.outcome === 'banned' ? atB.bannedUntil : 0, T0 + 2 + 60_000)
        assert.equal(atBAfter.outcome, 'allowed', 'the ban ended at the same instant for both')
      } finally {
        await Promise.all([a.close(), b.close()])
      }
    })

    it('When two deployments share one Redis, then the same subject counts apart in each', async () => {
      // Arrange: key ids are each database's own, so two deployments both have a key:1.
      const [production, staging] = [await openTestStore(kind, { clock: 'caller', namespace: 'db-a' }), await openTestStore(kind, { clock: 'caller', namespace: 'db-b' })]
      const request: HitRequest = { subject: subject('shared-id'), windows: [{ window: 'minute', limit: 1 }], ban: undefined }

      try {
        // Act
        const first = await production.hit(request, T0)
        const other = await staging.hit(request, T0)
        const again = await production.hit(request, T0)

        // Assert
        assert.deepEqual([first.outcome, other.outcome, again.outcome], ['allowed', 'allowed', 'limited'])
      } finally {
        await Promise.all([production.close(), staging.close()])
      }
    })

    it('When two instances\' clocks are 80 s apart, then they count in Redis\'s one minute and each reads the reset on its own clock', async () => {
      // Arrange: two stores on Redis's clock, their callers' clocks 80 s apart,
      // so that on their own clocks they could never share a minute.
      const [a, b] = [await openTestStore(kind), await openTestStore(kind)]
      const client = await openTestClient(kind)
      const request: HitRequest = { subject: subject('skew'), windows: [{ window: 'minute', limit: 2 }], ban: undefined }
      try {
        await awayFromMinuteEdge(client)
        const early = Date.now() - 40_000
        const late = Date.now() + 40_000

        // Act
        const first = await a.hit(request, early)
        const second = await b.hit(request, late)
        const third = await a.hit(request, early + 1)

        // Assert
        assert.deepEqual([first.outcome, second.outcome, third.outcome], ['allowed', 'allowed', 'limited'])
        const leftAtA = (first.windows[0]?.resetAt ?? 0) - early
        const leftAtB = (second.windows[0]?.resetAt ?? 0) - late
        assert.ok(leftAtA > 0 && leftAtA <= 60_000 + 100, `a's minute resets ${leftAtA} ms after a's now`)
        assert.ok(Math.abs(leftAtA - leftAtB) < 500, `a and b see the same reset: ${leftAtA} and ${leftAtB} ms from their own clocks`)
      } finally {
        client.disconnect()
        await Promise.all([a.close(), b.close()])
      }
    })
  })
}

describe('the Redis store on a cluster', () => {
  it('When a subject\'s keys are written, then they share one slot and one node', async () => {
    // Arrange
    const store = await openTestStore('cluster')
    const client = await openTestClient('cluster')
    const who = subject('slot')
    const request: HitRequest = { subject: who, windows: [{ window: 'minute', limit: 1 }, { window: 'day', limit: 10 }], ban: { threshold: 1, seconds: 60 } }

    try {
      // Act: admitted, then refused into a ban: every kind of key is written.
      for (let i = 0; i < 2; i++) await store.hit(request, Date.now())

      // Assert
      const keys = await keysMatching(client, `petstore:{${who}}:*`)
      assert.equal(keys.length, 4)
      const slots = new Set(await Promise.all(keys.map(async ({ key, server }) => await server.cluster('KEYSLOT', key))))
      assert.equal(slots.size, 1, 'one slot')
      assert.equal(new Set(keys.map(({ server }) => server)).size, 1, 'one node')
    } finally {
      client.disconnect()
      await store.close()
    }
  })
})

/** Waits, if need be, until Redis's clock is more than 3 s from a minute's edge, so that two hits land in one minute. */
async function awayFromMinuteEdge (client: Parameters<typeof redisTime>[0]): Promise<void> {
  const intoMinute = (await redisTime(client)) % 60_000
  if (intoMinute > 57_000) await delay(60_000 - intoMinute + 100)
}
