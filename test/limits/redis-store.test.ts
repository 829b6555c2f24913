import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { WINDOW_MS } from '../../src/domain.js'
import { windowStart, type BanPolicy, type Decision, type HitRequest } from '../../src/limits/store.js'
import { awayFromMinuteEdge, keysMatching, openTestClient, openTestStore, redisTime, type RedisKind } from '../support/redis.js'
import { rateLimitStoreContract } from './store-contract.js'

// On Redis's own clock, as in service: what happens across minutes and bans
// is arranged below by writing a subject's keys as an earlier minute, or a
// ban that has ended, left them.
rateLimitStoreContract('redis', async () => await openTestStore('single'))
rateLimitStoreContract('redis cluster', async () => await openTestStore('cluster'))

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

    it('When many requests from four instances race for the last units, then exactly the limit is admitted across them, each sees a count of its own, and only they are charged', async (t) => {
      // Arrange: four stores, four connections, as four instances of the service have. The day binds, so that no minute edge falls inside the race.
      const stores = await Promise.all(Array.from({ length: 4 }, async () => await openTestStore(kind)))
      const request: HitRequest = { subject: subject('race'), windows: [{ window: 'minute', limit: 10_000 }, { window: 'day', limit: 100 }], ban: undefined }

      try {
        // Act
        const decisions = await Promise.all(Array.from({ length: 400 }, async (_, i) => await stores[i % 4]?.hit(request, Date.now())))

        // Assert
        const admitted = decisions.filter((d) => d?.outcome === 'allowed')
        t.diagnostic(`admitted ${admitted.length} of 400 with a limit of 100`)
        assert.equal(admitted.length, 100)
        assert.deepEqual(admitted.map((d) => d?.windows[1]?.remaining).sort((x = 0, y = 0) => x - y), Array.from({ length: 100 }, (_, i) => i),
          'each admitted request saw a count of its own')
        const next = await stores[0]?.hit({ ...request, windows: [{ window: 'minute', limit: 10_000 }, { window: 'day', limit: 1000 }] }, Date.now())
        assert.equal(next?.windows[1]?.remaining, 899, 'the day window was charged for the admitted requests only')
      } finally {
        await Promise.all(stores.map(async (store) => { await store.close() }))
      }
    })

    it('When one instance bans a key, then the other refuses it as banned, until the same end', async () => {
      // Arrange
      const [a, b] = [await openTestStore(kind), await openTestStore(kind)]
      const client = await openTestClient(kind)
      const ban: BanPolicy = { threshold: 2, seconds: 60 }
      const request: HitRequest = { subject: subject('ban'), windows: [{ window: 'day', limit: 1 }], ban }

      try {
        // Act: `a` admits one, then refuses two, the second of which earns the ban.
        await awayFromMinuteEdge(3000, async () => await redisTime(client))
        const atA: Decision[] = []
        for (let i = 0; i < 3; i++) atA.push(await a.hit(request, Date.now()))
        const atB = await b.hit(request, Date.now())

        // Assert: `b` names the end Redis holds, read on its own clock.
        const earned = atA[2]?.outcome === 'limited' ? atA[2].banEarnedUntil : undefined
        const stored = Number(await client.get(`petstore:{${request.subject}}:ban`))
        assert.equal(atB.outcome, 'banned')
        assert.ok(earned !== undefined, 'the second refusal earned the ban')
        const bannedUntil = atB.outcome === 'banned' ? atB.bannedUntil : 0
        assert.ok(Math.abs(bannedUntil - stored) < 1000 && Math.abs(earned - stored) < 1000, `a says ${earned}, b says ${bannedUntil}, Redis holds ${stored}`)
      } finally {
        client.disconnect()
        await Promise.all([a.close(), b.close()])
      }
    })

    it('When a subject\'s count was left by an earlier minute, then this minute counts from zero', async () => {
      // Arrange: the minute's key as a request in the minute before left it, at the limit.
      const store = await openTestStore(kind)
      const client = await openTestClient(kind)
      const request: HitRequest = { subject: subject('minute'), windows: [{ window: 'minute', limit: 1 }], ban: undefined }
      const key = `petstore:{${request.subject}}:minute`
      try {
        await awayFromMinuteEdge(3000, async () => await redisTime(client))
        const thisMinute = windowStart('minute', await redisTime(client))
        await client.hset(key, 'start', String(thisMinute - WINDOW_MS.minute), 'count', '1')
        await client.pexpire(key, 60_000)

        // Act
        const first = await store.hit(request, Date.now())
        const second = await store.hit(request, Date.now())

        // Assert
        assert.deepEqual([first.outcome, second.outcome], ['allowed', 'limited'])
        assert.deepEqual(await client.hmget(key, 'start', 'count'), [String(thisMinute), '1'])
      } finally {
        client.disconnect()
        await store.close()
      }
    })

    it('When a ban has ended, then its subject is admitted again, and one more refusal in the same minute does not ban again', async () => {
      // Arrange: a ban earned by two refusals, then its end passed: the ban's key as Redis holds it in the second before it expires.
      const store = await openTestStore(kind)
      const client = await openTestClient(kind)
      const request: HitRequest = { subject: subject('ban-end'), windows: [{ window: 'day', limit: 1 }], ban: { threshold: 2, seconds: 60 } }
      try {
        await awayFromMinuteEdge(3000, async () => await redisTime(client))
        for (let i = 0; i < 3; i++) await store.hit(request, Date.now())
        assert.equal((await store.hit(request, Date.now())).outcome, 'banned', 'the refusals earned a ban')
        await client.set(`petstore:{${request.subject}}:ban`, String(await redisTime(client) - 1), 'PX', 1000)

        // Act
        const refused = await store.hit(request, Date.now())
        const admitted = await store.hit({ ...request, windows: [{ window: 'day', limit: 10 }] }, Date.now())

        // Assert
        assert.deepEqual(refused, { outcome: 'limited', windows: refused.windows }, 'limited, no new ban earned')
        assert.equal(admitted.outcome, 'allowed')
        assert.equal(admitted.windows[0]?.remaining, 8, 'the day holds the first request and this one')
      } finally {
        client.disconnect()
        await store.close()
      }
    })

    it('When two deployments share one Redis, then the same subject counts apart in each', async () => {
      // Arrange: key ids are each database's own, so two deployments both have a key:1.
      const [production, staging] = [await openTestStore(kind, { namespace: 'db-a' }), await openTestStore(kind, { namespace: 'db-b' })]
      const request: HitRequest = { subject: subject('shared-id'), windows: [{ window: 'day', limit: 1 }], ban: undefined }

      try {
        // Act
        const first = await production.hit(request, Date.now())
        const other = await staging.hit(request, Date.now())
        const again = await production.hit(request, Date.now())

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
        await awayFromMinuteEdge(3000, async () => await redisTime(client))
        const early = Date.now() - 40_000
        const late = Date.now() + 40_000

        // Act
        const started = performance.now()
        const first = await a.hit(request, early)
        const second = await b.hit(request, late)
        const calls = performance.now() - started
        const third = await a.hit(request, early + 1)

        // Assert
        assert.deepEqual([first.outcome, second.outcome, third.outcome], ['allowed', 'allowed', 'limited'])
        const leftAtA = (first.windows[0]?.resetAt ?? 0) - early
        const leftAtB = (second.windows[0]?.resetAt ?? 0) - late
        assert.ok(leftAtA > 0 && leftAtA <= 60_000 + 100, `a's minute resets ${leftAtA} ms after a's now`)
        // The same reset, read at two moments: apart by no more than both calls took, twice
        // (each store reads Redis's clock and answers against its caller's some time later), and a few ms of rounding.
        assert.ok(Math.abs(leftAtA - leftAtB) <= 2 * calls + 5, `a and b see the same reset: ${leftAtA} and ${leftAtB} ms from their own clocks, the calls took ${calls.toFixed(0)} ms`)
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
