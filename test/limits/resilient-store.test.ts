// Redis going away and coming back, on a redis-server of the test's own:
// frozen (SIGSTOP: connected, silent, as a hung server is), killed and
// restarted on its port, and absent when the service starts. The store is
// the one the service opens from REDIS_URL.
import { afterEach, beforeEach, describe, it, mock, type Mock, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { Degradation } from '../../src/limits/degradation.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { openRateLimitStore } from '../../src/limits/open.js'
import { RedisStore } from '../../src/limits/redis-store.js'
import { parseRedisUrl } from '../../src/limits/redis-url.js'
import { ResilientStore, type StoreLogger } from '../../src/limits/resilient-store.js'
import type { Decision, HitRequest, RateLimitStore, Release, SharedSlots } from '../../src/limits/store.js'
import { pollUntil, withTimeout } from '../support/process.js'
import { OwnRedisServer, redisTime } from '../support/redis.js'

/** Keeps what the store logs. */
class Log implements StoreLogger {
  readonly warnings: string[] = []
  readonly infos: string[] = []
  warn (details: Record<string, unknown>, message: string): void { this.warnings.push(message) }
  info (details: Record<string, unknown>, message: string): void { this.infos.push(message) }
}

let n = 0
const request = (): HitRequest => ({
  subject: `key:fault-${process.pid}-${Date.now()}-${n++}`,
  windows: [{ window: 'minute', limit: 100 }, { window: 'day', limit: 1000 }],
  ban: { threshold: 3, seconds: 60 }
})

/**
 * One hit, timed; it must answer within a second, however Redis is (docs/OPERATING.md: When Redis is unreachable).
 * `late`: whether a one-second timer set as it was sent fired before its answer. Timers fire in the order they
 * are due however late a busy machine runs them, so this tells a store that waited past a second from one that
 * did not, where the milliseconds measured would also count the machine's delays.
 */
async function timedHit (store: RateLimitStore, r: HitRequest): Promise<{ decision: Decision, ms: number, late: boolean }> {
  let late = false
  const second = setTimeout(() => { late = true }, 1000)
  const started = performance.now()
  try {
    const decision = await withTimeout(store.hit(r, Date.now()), 5000, 'a hit')
    return { decision, ms: performance.now() - started, late }
  } finally {
    clearTimeout(second)
  }
}

/** Polls health until ok; returns how long it took. */
async function untilHealthy (store: RateLimitStore): Promise<number> {
  const started = performance.now()
  await pollUntil(async () => (await store.health()).status === 'ok' ? true : undefined, { ms: 10_000, every: 50, what: 'the store to be ok again' })
  return performance.now() - started
}

/** The count the minute window of `r` holds in Redis, read with a client of the test's own. */
async function countInRedis (url: string, r: HitRequest): Promise<number> {
  const client = new Redis(url)
  try {
    return Number(await client.hget(`petstore:test:{${r.subject}}:minute`, 'count') ?? 0)
  } finally {
    client.disconnect()
  }
}

/** The server first: a frozen one is thawed by stop(), so that nothing waits on it. */
async function stopBoth (server: OwnRedisServer, store: RateLimitStore): Promise<void> {
  await server.stop()
  await store.close()
}

describe('the Redis store when Redis fails', () => {
  /** Every call to a Redis store's hit(), counted: the store the service opens is one. */
  let redisHits: Mock<RedisStore['hit']>
  beforeEach(() => { redisHits = mock.method(RedisStore.prototype, 'hit') })
  afterEach(() => { redisHits.mock.restore() })

  it('When Redis freezes, then requests are answered in-process within a second, health says degraded, and after it thaws the store goes back to it', { timeout: 30_000 }, async (t: TestContext) => {
    // Arrange
    const server = await OwnRedisServer.start()
    const log = new Log()
    const store = await openRateLimitStore(server.url, log, 'test')
    const r = request()
    try {
      assert.equal((await store.hit(r, Date.now())).outcome, 'allowed')
      assert.deepEqual(await store.health(), { status: 'ok' })

      // Act: five requests in flight as it freezes, then one more.
      server.freeze()
      const firsts = await Promise.all(Array.from({ length: 5 }, async () => await timedHit(store, r)))
      const redisHitsBefore = redisHits.mock.callCount()
      const second = await timedHit(store, r)
      const redisHitsBySecond = redisHits.mock.callCount() - redisHitsBefore
      const degraded = await store.health()

      // Assert: answered from memory, within a second, the change logged once.
      const slowest = Math.max(...firsts.map(({ ms }) => ms))
      t.diagnostic(`frozen: the first hits answered within ${slowest.toFixed(0)} ms, the next in ${second.ms.toFixed(1)} ms`)
      assert.deepEqual(firsts.map(({ decision }) => decision.outcome), Array(5).fill('allowed'))
      assert.deepEqual(firsts.map(({ late }) => late), Array(5).fill(false), `a hit waited past a second (the slowest: ${slowest} ms)`)
      assert.equal(second.decision.outcome, 'allowed')
      assert.equal(redisHitsBySecond, 0, 'a hit while degraded does not try Redis at all')
      assert.equal(degraded.status, 'degraded')
      assert.match(degraded.status === 'degraded' ? degraded.reason : '', /^redis unreachable \(.+\), limiting in-process$/)
      assert.equal(log.warnings.length, 1)

      // Act: it thaws.
      server.thaw()
      const recoveredIn = await untilHealthy(store)
      const before = await countInRedis(server.url, r)
      await store.hit(r, Date.now())
      const after = await countInRedis(server.url, r)

      // Assert: back on Redis, the change logged once.
      t.diagnostic(`thawed: healthy again after ${recoveredIn.toFixed(0)} ms`)
      assert.equal(after, before + 1, 'the hit was counted in Redis')
      assert.equal(log.infos.length, 1)
      assert.equal(log.warnings.length, 1)
    } finally {
      await stopBoth(server, store)
    }
  })

  it('When Redis is killed, then requests are answered in-process within a second, and once it is restarted on its port the store goes back to it', { timeout: 30_000 }, async (t: TestContext) => {
    // Arrange
    const server = await OwnRedisServer.start()
    const log = new Log()
    const store = await openRateLimitStore(server.url, log, 'test')
    const r = request()
    try {
      assert.equal((await store.hit(r, Date.now())).outcome, 'allowed')

      // Act
      await server.kill()
      const first = await timedHit(store, r)
      const degraded = await store.health()

      // Assert
      t.diagnostic(`killed: first hit answered in ${first.ms.toFixed(1)} ms`)
      assert.equal(first.decision.outcome, 'allowed')
      assert.equal(first.late, false, `the first hit waited past a second (${first.ms} ms)`)
      assert.equal(degraded.status, 'degraded')
      assert.equal(log.warnings.length, 1)

      // Act: a new server on the same port, which has never seen the script.
      const restartedAt = performance.now()
      await server.restart()
      await untilHealthy(store)
      const recoveredIn = performance.now() - restartedAt
      await store.hit(r, Date.now())

      // Assert: counted afresh by the new server.
      t.diagnostic(`restarted: healthy again ${recoveredIn.toFixed(0)} ms after the server was`)
      assert.equal(await countInRedis(server.url, r), 1)
      assert.equal(log.infos.length, 1)
    } finally {
      await stopBoth(server, store)
    }
  })

  it('When Redis is down as the service starts, then it starts degraded, and uses Redis once Redis is up', { timeout: 30_000 }, async () => {
    // Arrange: a port with no server behind it yet.
    const server = await OwnRedisServer.start()
    await server.kill()
    const log = new Log()

    // Act
    const store = await openRateLimitStore(server.url, log, 'test')
    const r = request()
    try {
      const atStart = await store.health()
      const { decision } = await timedHit(store, r)
      const redisHitsWhileDegraded = redisHits.mock.callCount()
      await server.restart()
      await untilHealthy(store)
      await store.hit(r, Date.now())

      // Assert
      assert.equal(atStart.status, 'degraded')
      assert.equal(decision.outcome, 'allowed')
      assert.equal(redisHitsWhileDegraded, 0, 'a hit while degraded does not try Redis at all')
      assert.deepEqual([log.warnings.length, log.infos.length], [1, 1])
      assert.equal(await countInRedis(server.url, r), 1)
    } finally {
      await stopBoth(server, store)
    }
  })
})

describe('the Redis stores of one instance\'s workers when Redis fails', () => {
  let redisHits: Mock<RedisStore['hit']>
  beforeEach(() => { redisHits = mock.method(RedisStore.prototype, 'hit') })
  afterEach(() => { redisHits.mock.restore() })

  /** A worker's store, as a worker opens it: a Redis client of its own, the instance's fallback and the instance's state. */
  async function workerStore (url: string, fallback: RateLimitStore, degradation: Degradation, log: StoreLogger): Promise<RateLimitStore> {
    return await openRateLimitStore(url, log, 'test', fallback, degradation)
  }

  it('When one worker finds Redis frozen, then every worker limits in-process at once, and one finding it back moves them all back; each change logged once', { timeout: 30_000 }, async () => {
    // Arrange: two workers' stores, one fallback and one state between them.
    const server = await OwnRedisServer.start()
    const degradation = new Degradation()
    const fallback = new MemoryStore()
    const [logA, logB] = [new Log(), new Log()]
    const a = await workerStore(server.url, fallback, degradation, logA)
    const b = await workerStore(server.url, fallback, degradation, logB)
    const r = request()
    try {
      // Act: A meets the frozen Redis; then B is asked.
      server.freeze()
      await timedHit(a, r)
      const redisHitsBefore = redisHits.mock.callCount()
      const onB = await timedHit(b, r)
      const redisHitsByB = redisHits.mock.callCount() - redisHitsBefore
      const healthOfB = await b.health()

      // Assert: B did not wait on Redis, and says why.
      assert.equal(redisHitsByB, 0, 'a worker of a degraded instance does not try Redis')
      assert.equal(onB.decision.outcome, 'allowed')
      assert.deepEqual(healthOfB, { status: 'degraded', reason: 'redis unreachable (found by another worker), limiting in-process' })
      assert.deepEqual([logA.warnings.length, logB.warnings.length], [1, 0])

      // Act: it thaws; B's own probe, or A's, finds it back.
      server.thaw()
      await untilHealthy(b)
      const infos = logA.infos.length + logB.infos.length
      const redisHitsBack = redisHits.mock.callCount()
      await Promise.all([a.hit(r, Date.now()), b.hit(r, Date.now())])

      // Assert: the way back logged by one of them, and both ask Redis again
      // (asked, not counted: on a loaded machine an answer may come after the
      // 500 ms a request waits for it, and be counted after this reads it).
      assert.equal(infos, 1)
      assert.equal(redisHits.mock.callCount() - redisHitsBack, 2, 'both workers asked Redis')
    } finally {
      await server.stop()
      await Promise.all([a.close(), b.close()])
    }
  })
})

describe('requests in flight when Redis fails', () => {
  const LEASE_MS = 1000

  /** The store the service opens from REDIS_URL, with leases of a second, so that a renewal comes within a fifth of one. */
  async function openWithSlots (url: string, log: StoreLogger): Promise<{ store: RateLimitStore, slots: SharedSlots }> {
    const redis = new RedisStore(parseRedisUrl(url), { namespace: 'test', leaseMs: LEASE_MS })
    await redis.whenReady(5000)
    const store = await ResilientStore.open(redis, new MemoryStore(), log)
    assert.ok(store.slots !== undefined)
    return { store, slots: store.slots }
  }

  /** What `work` gives, timed; it must be had within a second, however Redis is. `late`: as timedHit's. */
  async function timed<T> (work: Promise<T>, what: string): Promise<{ value: T, ms: number, late: boolean }> {
    let late = false
    const second = setTimeout(() => { late = true }, 1000)
    const started = performance.now()
    try {
      const value = await withTimeout(work, 5000, what)
      return { value, ms: performance.now() - started, late }
    } finally {
      clearTimeout(second)
    }
  }

  /** A slot, timed. */
  async function timedTake (slots: SharedSlots, subject: string): Promise<{ release: Release | undefined, ms: number, late: boolean }> {
    const { value, ms, late } = await timed(slots.take(subject, 5), 'a slot')
    return { release: value, ms, late }
  }

  /** The leases of `subject` that have not ended, on Redis's clock, read with a client of the test's own. */
  async function liveLeases (url: string, subject: string): Promise<number> {
    const client = new Redis(url)
    try {
      return await client.zcount(`petstore:test:{${subject}}:inflight`, `(${await redisTime(client)}`, '+inf')
    } finally {
      client.disconnect()
    }
  }

  it('When Redis freezes, then a slot is had within a second from the process\'s own count, the log and health say so once, and after it thaws the slots still held are counted in Redis again', { timeout: 30_000 }, async (t: TestContext) => {
    // Arrange: one slot taken in Redis.
    const server = await OwnRedisServer.start()
    const log = new Log()
    const { store, slots } = await openWithSlots(server.url, log)
    const subject = `key:fault-slots-${process.pid}-${Date.now()}`
    try {
      const before = await slots.take(subject, 5)
      assert.notEqual(before, undefined)

      // Act: a slot alone, then a request's limit and slot in one step.
      server.freeze()
      const during = await timedTake(slots, subject)
      const degraded = await store.health()
      const both = await timed(store.hitHolding?.({ ...request(), subject }, Date.now(), 5) ?? Promise.resolve(undefined), 'a limit and a slot')

      // Assert
      t.diagnostic(`frozen: a slot had in ${during.ms.toFixed(0)} ms, a limit and a slot in ${both.ms.toFixed(0)} ms`)
      assert.notEqual(during.release, undefined)
      assert.equal(during.late, false, `a slot waited past a second (${during.ms} ms)`)
      assert.equal(both.value?.decision.outcome, 'allowed', 'decided in-process')
      assert.equal(both.late, false, `a limit and a slot waited past a second (${both.ms} ms)`)
      assert.equal(degraded.status, 'degraded')
      assert.deepEqual(log.warnings, ['rate-limit store redis unreachable: limiting in-process, per instance (rate limits and requests in flight), until it answers again'])

      // Act: it thaws.
      server.thaw()
      await untilHealthy(store)
      // The slot asked for while it was frozen reached it and was taken on thawing, after the
      // store had stopped waiting: its lease, which nobody renews, ends within one.
      await delay(LEASE_MS + 200)
      const live = await liveLeases(server.url, subject)
      before?.()
      during.release?.()
      both.value?.release()

      // Assert: the slot taken before and the two held while Redis was frozen are all counted, all are given back, and the way back is logged once.
      assert.equal(live, 3)
      await pollUntil(async () => (await liveLeases(server.url, subject)) === 0 ? true : undefined, { ms: 5000, every: 50, what: 'every slot given back' })
      assert.equal(log.infos.length, 1)
    } finally {
      await stopBoth(server, store)
    }
  })

  it('When Redis is killed and restarted empty, then a slot is had within a second meanwhile, and every slot still held is counted in the new Redis within a renewal', { timeout: 30_000 }, async (t: TestContext) => {
    // Arrange
    const server = await OwnRedisServer.start()
    const log = new Log()
    const { store, slots } = await openWithSlots(server.url, log)
    const subject = `key:fault-slots-${process.pid}-${Date.now()}`
    try {
      const before = await slots.take(subject, 5)
      assert.notEqual(before, undefined)

      // Act: a request's limit and slot in one step, then a slot alone.
      await server.kill()
      const both = await timed(store.hitHolding?.({ ...request(), subject }, Date.now(), 5) ?? Promise.resolve(undefined), 'a limit and a slot')
      const during = await timedTake(slots, subject)
      await server.restart()
      await untilHealthy(store)
      const back = performance.now()
      await pollUntil(async () => (await liveLeases(server.url, subject)) === 3 ? true : undefined, { ms: 5 * LEASE_MS, every: 50, what: 'the three slots in the new Redis' })
      const countedIn = performance.now() - back

      // Assert
      t.diagnostic(`killed: a limit and a slot had in ${both.ms.toFixed(1)} ms, a slot alone in ${during.ms.toFixed(1)} ms; restarted: every slot counted ${countedIn.toFixed(0)} ms after the store was back`)
      assert.equal(both.value?.decision.outcome, 'allowed', 'decided in-process')
      assert.equal(both.late, false, `a limit and a slot waited past a second (${both.ms} ms)`)
      assert.notEqual(during.release, undefined)
      assert.equal(during.late, false, `a slot waited past a second (${during.ms} ms)`)
      assert.ok(countedIn <= 2 * LEASE_MS / 5 + 200, `counted ${countedIn} ms after, not within a renewal`)
      before?.()
      during.release?.()
      both.value?.release()
      await pollUntil(async () => (await liveLeases(server.url, subject)) === 0 ? true : undefined, { ms: 5000, every: 50, what: 'every slot given back' })
    } finally {
      await stopBoth(server, store)
    }
  })
})
