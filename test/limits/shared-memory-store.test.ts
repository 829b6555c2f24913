import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { createSharedLimits, sharedLimitsCapacity, SharedMemoryStore } from '../../src/limits/shared-memory-store.js'
import type { BanPolicy, Decision, HitRequest, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { rateLimitStoreContract } from './store-contract.js'

// One table for the whole suite, as one process has: each test's subjects are its own.
const table = createSharedLimits()
rateLimitStoreContract('shared-memory', async () => new SharedMemoryStore(table))

const T0 = CLOCK_START
const ONE_A_MINUTE: WindowLimit[] = [{ window: 'minute', limit: 1 }]

/** A store on a clock the test sets: each hit happens at its `now`, and the store's clock reads the same. */
function storeOnTestClock (maxSubjects: number): { store: SharedMemoryStore, hit: (subject: string, now?: number, windows?: WindowLimit[], ban?: BanPolicy) => Promise<Decision['outcome']> } {
  let clock = T0
  // Below 64 subjects the table is one shard: its eviction order is the whole store's, as in the in-process store.
  const store = new SharedMemoryStore(createSharedLimits({ maxSubjects }), () => clock)
  const hit = async (subject: string, now = T0, windows = ONE_A_MINUTE, ban?: BanPolicy): Promise<Decision['outcome']> => {
    clock = now
    return (await store.hit({ subject, windows, ban }, now)).outcome
  }
  return { store, hit }
}

describe('the shared-memory store across minutes and bans, on a clock the test moves', () => {
  let n = 0
  const request = (perMinute: number, perDay: number, ban: BanPolicy | undefined = { threshold: 3, seconds: 60 }): HitRequest => ({
    subject: `key:clocked-${n++}`,
    windows: [{ window: 'minute', limit: perMinute }, { window: 'day', limit: perDay }],
    ban
  })
  const NEXT_MINUTE = Date.parse('2027-03-10T12:01:00Z')

  it('When under both limits, then each window resets at its UTC end', async () => {
    const store = new SharedMemoryStore(table, () => T0)
    const decision = await store.hit(request(2, 10), T0)
    await store.close()
    assert.deepEqual(decision.windows.map((w) => w.resetAt), [NEXT_MINUTE, Date.parse('2027-03-11T00:00:00Z')])
  })

  it('When one window is full, then limited, and the next minute counts only what was admitted', async () => {
    const store = new SharedMemoryStore(table, () => T0)
    const r = request(1, 10)
    await store.hit(r, T0)
    const refused = await store.hit(r, T0 + 1)
    const nextMinute = await store.hit(r, NEXT_MINUTE)
    await store.close()
    assert.equal(refused.outcome, 'limited')
    assert.equal(nextMinute.outcome, 'allowed')
    assert.equal(nextMinute.windows[1]?.remaining, 8, 'the day window was charged twice, not three times')
  })

  it('When refusals reach the threshold, then the subject is banned until the ban\'s end, and admitted from then on', async () => {
    const store = new SharedMemoryStore(table, () => T0)
    const r = request(1, 100)
    await store.hit(r, T0)
    for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
    const lastBanned = await store.hit(r, T0 + 2 + 60_000 - 1)
    const after = await store.hit(r, T0 + 2 + 60_000)
    await store.close()
    assert.equal(lastBanned.outcome, 'banned')
    assert.equal(lastBanned.outcome === 'banned' ? lastBanned.bannedUntil : 0, T0 + 2 + 60_000)
    assert.equal(after.outcome, 'allowed')
  })

  it('When a ban ends, then one more refusal in the same minute does not ban again', async () => {
    const store = new SharedMemoryStore(table, () => T0)
    const r = request(1, 100, { threshold: 3, seconds: 10 })
    await store.hit(r, T0)
    for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
    const afterBan = T0 + 2 + 10_000
    const outcomes = [(await store.hit(r, afterBan - 1)).outcome, (await store.hit(r, afterBan)).outcome, (await store.hit(r, afterBan + 1)).outcome]
    await store.close()
    assert.deepEqual(outcomes, ['banned', 'limited', 'limited'])
  })

  it('When a subject was banned, then after the ban its day window holds only what was admitted', async () => {
    const store = new SharedMemoryStore(table, () => T0)
    const r = request(1, 100, { threshold: 3, seconds: 10 })
    await store.hit(r, T0)
    for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
    for (let i = 0; i < 5; i++) await store.hit(r, T0 + 10 + i)
    const after = await store.hit(r, NEXT_MINUTE)
    await store.close()
    assert.equal(after.outcome, 'allowed')
    assert.equal(after.windows[1]?.remaining, 98)
  })
})

describe('the shared-memory store\'s cap on subjects', () => {
  it('When more subjects arrive than the cap, then the last ones still count and the earlier ones are forgotten', async () => {
    // Arrange
    const { store, hit } = storeOnTestClock(3)

    // Act: ten subjects, each at its limit.
    for (let i = 0; i < 10; i++) await hit(`addr:10.0.0.${i}`)

    // Assert: the three most recent are refused (kept, most recent first, so
    // that asking changes nothing); then an early one starts afresh.
    const recent = [await hit('addr:10.0.0.9'), await hit('addr:10.0.0.8'), await hit('addr:10.0.0.7')]
    const early = await hit('addr:10.0.0.6')
    await store.close()
    assert.deepEqual(recent, ['limited', 'limited', 'limited'])
    assert.equal(early, 'allowed', 'a subject past the cap was forgotten')
  })

  it('When the store is full, then the least recently used subject goes and a recently used one stays', async () => {
    // Arrange: three subjects, each at its limit; then `a` is seen again.
    const { store, hit } = storeOnTestClock(3)
    for (const subject of ['addr:a', 'addr:b', 'addr:c']) await hit(subject)
    await hit('addr:a', T0 + 1)

    // Act
    await hit('addr:d', T0 + 2)

    // Assert: `a` still counts; `b`, the least recently used, starts again.
    const a = await hit('addr:a', T0 + 3)
    const b = await hit('addr:b', T0 + 4)
    await store.close()
    assert.equal(a, 'limited', 'the recently used subject kept its count')
    assert.equal(b, 'allowed', 'the least recently used subject was forgotten')
  })

  it('When the store is full and some subjects\' windows have ended, then those go before a subject that still counts', async () => {
    // Arrange: a key used up for the day, then an address whose minute ends first.
    const { store, hit } = storeOnTestClock(2)
    const day: WindowLimit[] = [{ window: 'minute', limit: 10 }, { window: 'day', limit: 1 }]
    await hit('key:1', T0, day)
    await hit('addr:old', T0 + 1)

    // Act: a new subject in the next minute.
    await hit('addr:new', T0 + 60_000)

    // Assert
    assert.equal(await hit('key:1', T0 + 60_001, day), 'limited', 'the key kept its day count')
    await store.close()
  })

  it('When a flood of new subjects passes a banned key, then the ban stays and the flood is capped', async () => {
    // Arrange: a key banned by its first refusal.
    const { store, hit } = storeOnTestClock(2)
    const ban: BanPolicy = { threshold: 1, seconds: 900 }
    await hit('key:1', T0, ONE_A_MINUTE, ban)
    await hit('key:1', T0 + 1, ONE_A_MINUTE, ban)

    // Act
    for (let i = 0; i < 10; i++) await hit(`addr:10.0.0.${i}`, T0 + 2)

    // Assert: the ban held; beside it, room for one subject only: the last of the flood.
    assert.equal(await hit('key:1', T0 + 3, ONE_A_MINUTE, ban), 'banned')
    assert.equal(await hit('addr:10.0.0.9', T0 + 4), 'limited', 'the last of the flood is kept')
    assert.equal(await hit('addr:10.0.0.8', T0 + 5), 'allowed', 'the one before it is not')
    await store.close()
  })

  it('When every subject is banned and a new one arrives, then the cap still holds and the oldest ban goes', async () => {
    // Arrange
    const { store, hit } = storeOnTestClock(2)
    const ban: BanPolicy = { threshold: 1, seconds: 900 }
    for (const subject of ['key:1', 'key:2']) {
      await hit(subject, T0, ONE_A_MINUTE, ban)
      await hit(subject, T0 + 1, ONE_A_MINUTE, ban)
    }

    // Act
    await hit('key:3', T0 + 2)

    // Assert: key:2 and key:3 are kept, key:1 (the oldest ban) is not.
    assert.equal(await hit('key:2', T0 + 3, ONE_A_MINUTE, ban), 'banned')
    assert.equal(await hit('key:3', T0 + 3), 'limited')
    assert.equal(await hit('key:1', T0 + 4, ONE_A_MINUTE, ban), 'allowed')
    await store.close()
  })

  it('When the store is full and a ban has ended since the minute began, then that subject goes before one that still counts', async () => {
    // Arrange: an address banned past its minute's end, two keys spent for the day; a new subject early in the next minute.
    const { store, hit } = storeOnTestClock(3)
    const ban: BanPolicy = { threshold: 1, seconds: 60 }
    const day: WindowLimit[] = [{ window: 'day', limit: 1 }]
    await hit('addr:banned', T0, ONE_A_MINUTE, ban)
    await hit('addr:banned', T0 + 1, ONE_A_MINUTE, ban)
    await hit('key:1', T0 + 2, day)
    await hit('key:2', T0 + 3, day)
    await hit('addr:x', T0 + 30_500)

    // Act: the ban has ended, in the same minute.
    await hit('addr:y', T0 + 60_002)

    // Assert
    assert.equal(await hit('key:2', T0 + 60_003, day), 'limited', 'the key kept its day count')
    await store.close()
  })

  it('When 80,000 addresses in a row are each at their limit, then the default table still counts every one: no shard has overflowed', async () => {
    // Arrange: a fresh table (its seed is drawn anew). With 64 slots a shard, the chance that one overflows is below 1 in 6 million.
    const store = new SharedMemoryStore(createSharedLimits(), () => T0)
    const subjects = Array.from({ length: 80_000 }, (_, i) => `addr:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`)
    for (const subject of subjects) await store.hit({ subject, windows: ONE_A_MINUTE, ban: undefined }, T0)

    // Act
    let forgotten = 0
    for (const subject of subjects) if ((await store.hit({ subject, windows: ONE_A_MINUTE, ban: undefined }, T0 + 1)).outcome === 'allowed') forgotten++

    // Assert
    assert.equal(forgotten, 0)
  })

  it('When no cap is given, then the table holds 200,000 subjects, twice the in-process store\'s, in shards of 64', () => {
    assert.equal(sharedLimitsCapacity(table), 200_000)
    assert.equal(table.buffer.byteLength, 64 + 3125 * 8256)
  })

  for (const maxSubjects of [0, -1, 1.5, Number.NaN]) {
    it(`When maxSubjects is ${maxSubjects}, then the store refuses to start`, () => {
      assert.throws(() => createSharedLimits({ maxSubjects }), RangeError)
    })
  }
})

describe('the shared-memory store\'s subjects', () => {
  it('When two subjects too long to keep whole differ only at their end, then each is counted apart, by its digest', async () => {
    // Arrange
    const { store, hit } = storeOnTestClock(4)
    const long = `key:${'x'.repeat(80)}`

    // Act
    const first = [await hit(`${long}-1`), await hit(`${long}-1`)]
    const other = await hit(`${long}-2`)
    await store.close()

    // Assert
    assert.deepEqual(first, ['allowed', 'limited'])
    assert.equal(other, 'allowed')
  })

  it('When a subject is not ASCII or is as long as can be kept, then it is counted as itself', async () => {
    const { store, hit } = storeOnTestClock(4)
    const subjects = ['addr:bücher', `key:${'é'.repeat(22)}`, `key:${'y'.repeat(44)}`, `key:${'y'.repeat(45)}`]

    for (const subject of subjects) await hit(subject)
    const again = []
    for (const subject of subjects) again.push(await hit(subject))
    await store.close()

    assert.deepEqual(again, ['limited', 'limited', 'limited', 'limited'])
  })

  it('When two stores wrap one table, then a subject charged through one is counted by the other', async () => {
    const table = createSharedLimits({ maxSubjects: 100 })
    const one = new SharedMemoryStore(table, () => T0)
    const other = new SharedMemoryStore(table, () => T0)
    const r: HitRequest = { subject: 'key:7', windows: ONE_A_MINUTE, ban: undefined }

    const first = await one.hit(r, T0)
    const second = await other.hit(r, T0)

    assert.deepEqual([first.outcome, second.outcome], ['allowed', 'limited'])
  })

  it('When a full store is only looked at, then the subject looked at is not made more recently used', async () => {
    // Arrange: a then b, each at its limit; a is looked at.
    const { store, hit } = storeOnTestClock(2)
    await hit('addr:a')
    await hit('addr:b', T0 + 1)
    await store.hit({ subject: 'addr:a', windows: ONE_A_MINUTE, ban: undefined, charge: false }, T0 + 2)

    // Act
    await hit('addr:c', T0 + 3)

    // Assert: a, still the least recently used, went.
    assert.equal(await hit('addr:b', T0 + 4), 'limited')
    assert.equal(await hit('addr:a', T0 + 5), 'allowed')
    await store.close()
  })
})

describe('the shared-memory store against the in-process store', () => {
  const SUBJECTS = ['key:1', 'key:2', 'addr:10.0.0.1', 'addr:10.0.0.2', 'addr:2001:db8:0:1::/64', `key:${'z'.repeat(70)}`]
  const WINDOWS: WindowLimit[][] = [
    [{ window: 'minute', limit: 1 }, { window: 'day', limit: 3 }],
    [{ window: 'minute', limit: 2 }, { window: 'day', limit: 2 }],
    [{ window: 'minute', limit: 2 }],
    [{ window: 'day', limit: 4 }]
  ]
  const hitsWith = (steps: number[]) => fc.array(fc.record({
    subject: fc.constantFrom(...SUBJECTS),
    step: fc.constantFrom(...steps),
    windows: fc.constantFrom(...WINDOWS),
    charge: fc.constantFrom(true, true, true, false)
  }), { maxLength: 100 })
  type Hits = Array<{ subject: string, step: number, windows: WindowLimit[], charge: boolean }>

  /** Plays the hits on both stores, on one clock the test moves, and compares every decision. */
  async function playOnBoth (maxSubjects: number, ban: BanPolicy | undefined, start: number, hits: Hits): Promise<void> {
    let now = start
    const memory = new MemoryStore(() => now, { maxSubjects })
    const shared = new SharedMemoryStore(createSharedLimits({ maxSubjects }), () => now)
    try {
      for (const [i, { step, ...request }] of hits.entries()) {
        now += step
        assert.deepEqual(await shared.hit({ ...request, ban }, now), await memory.hit({ ...request, ban }, now), `hit ${i}`)
      }
    } finally {
      await memory.close()
    }
  }

  it('When any sequence of hits and looks, across minutes, days and bans, is played on both with room for every subject, then every decision is the same', async () => {
    // A policy a run, as the service has: mostly a ban, often one earned at the first or second refusal; steps that cross a millisecond, a ban's end, a minute and a day.
    const ban = fc.option(fc.record({ threshold: fc.integer({ min: 1, max: 3 }), seconds: fc.constantFrom(1, 5, 60, 900) }), { nil: undefined, freq: 4 })
    const hits = hitsWith([0, 0, 0, 1, 999, 5_000, 30_000, 60_000, 3_600_000, 86_400_000])

    await fc.assert(fc.asyncProperty(ban, hits, async (ban, hits) => { await playOnBoth(SUBJECTS.length, ban, T0, hits) }), { numRuns: 1000 })
  })

  it('When any sequence of hits and looks is played on both with a cap that evicts, then every decision is the same', async () => {
    // Without bans, and never on a minute's first millisecond: the in-process store can keep a subject that no longer counts only then, or once a ban ends.
    const hits = hitsWith([0, 0, 0, 2, 998, 5_000, 30_000, 60_000, 3_600_000, 86_400_000])

    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: SUBJECTS.length - 1 }), hits, async (maxSubjects, hits) => { await playOnBoth(maxSubjects, undefined, T0 + 1, hits) }), { numRuns: 1000 })
  })
})
