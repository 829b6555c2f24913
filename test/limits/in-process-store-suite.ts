// One suite for the stores that decide on a clock the test moves, the
// in-process store and the shared-memory one: what happens across minutes
// and bans, and which subject goes when the store is full. Both must follow
// the same rule (limits/rule.ts) and make room alike, so both run every case.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { BanPolicy, Decision, HitRequest, RateLimitStore, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'

/** A store reading `clock`, keeping at most `maxSubjects` subjects (the store's default when undefined); throws RangeError for a cap it refuses. */
type OpenClockedStore = (clock: () => number, maxSubjects?: number) => RateLimitStore

const T0 = CLOCK_START
const ONE_A_MINUTE: WindowLimit[] = [{ window: 'minute', limit: 1 }]

export function inProcessStoreSuite (name: string, open: OpenClockedStore): void {
  /** A store on a clock the test sets: each hit happens at its `now`, and the store's clock reads the same. */
  function storeOnTestClock (maxSubjects: number): { store: RateLimitStore, hit: (subject: string, now?: number, windows?: WindowLimit[], ban?: BanPolicy) => Promise<Decision['outcome']> } {
    let clock = T0
    const store = open(() => clock, maxSubjects)
    const hit = async (subject: string, now = T0, windows = ONE_A_MINUTE, ban?: BanPolicy): Promise<Decision['outcome']> => {
      clock = now
      return (await store.hit({ subject, windows, ban }, now)).outcome
    }
    return { store, hit }
  }

  describe(`the ${name} store across minutes and bans, on a clock the test moves`, () => {
    let n = 0
    const request = (perMinute: number, perDay: number, ban: BanPolicy | undefined = { threshold: 3, seconds: 60 }): HitRequest => ({
      subject: `key:clocked-${n++}`,
      windows: [{ window: 'minute', limit: perMinute }, { window: 'day', limit: perDay }],
      ban
    })
    const NEXT_MINUTE = Date.parse('2027-03-10T12:01:00Z')

    it('When under both limits, then each window resets at its UTC end', async () => {
      const store = open(() => T0)
      const decision = await store.hit(request(2, 10), T0)
      await store.close()
      assert.deepEqual(decision.windows.map((w) => w.resetAt), [NEXT_MINUTE, Date.parse('2027-03-11T00:00:00Z')])
    })

    it('When one window is full, then limited, and the next minute counts only what was admitted', async () => {
      const store = open(() => T0)
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
      const store = open(() => T0)
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
      const store = open(() => T0)
      const r = request(1, 100, { threshold: 3, seconds: 10 })
      await store.hit(r, T0)
      for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
      const afterBan = T0 + 2 + 10_000
      const outcomes = [(await store.hit(r, afterBan - 1)).outcome, (await store.hit(r, afterBan)).outcome, (await store.hit(r, afterBan + 1)).outcome]
      await store.close()
      assert.deepEqual(outcomes, ['banned', 'limited', 'limited'])
    })

    it('When a subject was banned, then after the ban its day window holds only what was admitted', async () => {
      const store = open(() => T0)
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

  describe(`the ${name} store's cap on subjects`, () => {
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

    // The eviction bug: a full store evicted a subject that still counted and kept one that had stopped counting at that very instant.
    it('When a full store makes room at the first millisecond of a minute, then the subject whose window ended then goes, not one that still counts', async () => {
      // Arrange: a key spent for the day, then an address whose minute ends at the next minute's first millisecond.
      const { store, hit } = storeOnTestClock(2)
      const day: WindowLimit[] = [{ window: 'minute', limit: 10 }, { window: 'day', limit: 1 }]
      await hit('key:1', T0, day)
      await hit('addr:old', T0 + 1)
      const nextMinute = Date.parse('2027-03-10T12:01:00Z')

      // Act
      await hit('addr:new', nextMinute)

      // Assert
      assert.equal(await hit('key:1', nextMinute + 1, day), 'limited', 'the key kept its day count')
      await store.close()
    })

    // The eviction bug's other case: an ended ban, when the room is made 1 ms after its end and at the instant itself.
    for (const { title, at } of [
      { title: 'When the store is full and a ban has ended since the minute began, then that subject goes before one that still counts', at: T0 + 60_002 },
      { title: 'When a full store makes room at the instant a ban ends, after the minute\'s purge, then the banned subject goes, not one that still counts', at: T0 + 60_001 }
    ]) {
      it(title, async () => {
        // Arrange: an address banned past its minute's end (until T0 + 1 + 60 s), two keys spent for the day; a new subject early in the next minute.
        const { store, hit } = storeOnTestClock(3)
        const ban: BanPolicy = { threshold: 1, seconds: 60 }
        const day: WindowLimit[] = [{ window: 'day', limit: 1 }]
        await hit('addr:banned', T0, ONE_A_MINUTE, ban)
        await hit('addr:banned', T0 + 1, ONE_A_MINUTE, ban)
        await hit('key:1', T0 + 2, day)
        await hit('key:2', T0 + 3, day)
        await hit('addr:x', T0 + 30_500)

        // Act
        await hit('addr:y', at)

        // Assert
        assert.equal(await hit('key:2', at + 1, day), 'limited', 'the key kept its day count')
        await store.close()
      })
    }

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

    for (const maxSubjects of [0, -1, 1.5, Number.NaN]) {
      it(`When maxSubjects is ${maxSubjects}, then the store refuses to start`, () => {
        assert.throws(() => open(Date.now, maxSubjects), RangeError)
      })
    }
  })
}
