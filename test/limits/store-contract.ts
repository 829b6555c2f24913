// One suite for every rate-limit store: each backend must decide alike.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { HitRequest, RateLimitStore } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'

const T0 = CLOCK_START

export function rateLimitStoreContract (name: string, open: () => Promise<RateLimitStore>): void {
  describe(`rate-limit store contract: ${name}`, () => {
    let n = 0
    const request = (perMinute: number, perDay: number, ban = { threshold: 3, seconds: 60 }): HitRequest => ({
      subject: `key:contract-${name}-${Date.now()}-${n++}`,
      windows: [{ window: 'minute', limit: perMinute }, { window: 'day', limit: perDay }],
      ban
    })
    const withStore = async (work: (store: RateLimitStore) => Promise<void>) => {
      const store = await open()
      try { await work(store) } finally { await store.close() }
    }

    it('When under both limits, then allowed and one unit is charged to each window', () => withStore(async (store) => {
      const r = request(2, 10)
      const decision = await store.hit(r, T0)
      assert.equal(decision.outcome, 'allowed')
      assert.deepEqual(decision.windows.map((w) => [w.window, w.remaining]), [['minute', 1], ['day', 9]])
      assert.equal(decision.windows[0]?.resetAt, Date.parse('2027-03-10T12:01:00Z'))
      assert.equal(decision.windows[1]?.resetAt, Date.parse('2027-03-11T00:00:00Z'))
    }))

    it('When one window is full, then limited and neither window is charged', () => withStore(async (store) => {
      const r = request(1, 10)
      await store.hit(r, T0)
      const refused = await store.hit(r, T0 + 1)
      const nextMinute = await store.hit(r, Date.parse('2027-03-10T12:01:00Z'))
      assert.equal(refused.outcome, 'limited')
      assert.equal(nextMinute.outcome, 'allowed')
      assert.equal(nextMinute.windows[1]?.remaining, 8, 'the day window was charged twice, not three times')
    }))

    it('When refusals reach the threshold in one minute, then the next request is banned until the ban ends', () => withStore(async (store) => {
      const r = request(1, 100)
      await store.hit(r, T0)
      for (let i = 0; i < 3; i++) assert.equal((await store.hit(r, T0 + i)).outcome, 'limited')
      const banned = await store.hit(r, T0 + 10)
      assert.equal(banned.outcome, 'banned')
      assert.equal(banned.outcome === 'banned' ? banned.bannedUntil : 0, T0 + 2 + 60_000)
      assert.equal((await store.hit(r, T0 + 2 + 60_000)).outcome, 'allowed')
    }))

    it('When a refusal reaches the threshold, then its decision says that it earned a ban, and until when; no other does', () => withStore(async (store) => {
      const r = request(1, 100)
      await store.hit(r, T0)

      const refusals = []
      for (let i = 0; i < 3; i++) refusals.push(await store.hit(r, T0 + i))

      const earned = refusals.map((d) => d.outcome === 'limited' ? d.banEarnedUntil : 'not limited')
      assert.deepEqual(earned, [undefined, undefined, T0 + 2 + 60_000])
    }))

    it('When a ban ends, then one more refusal in the same minute does not ban again', () => withStore(async (store) => {
      const r = request(1, 100, { threshold: 3, seconds: 10 })
      await store.hit(r, T0)
      for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
      const afterBan = T0 + 2 + 10_000
      assert.equal((await store.hit(r, afterBan - 1)).outcome, 'banned', 'the refusals did not earn a ban')
      assert.equal((await store.hit(r, afterBan)).outcome, 'limited')
      assert.equal((await store.hit(r, afterBan + 1)).outcome, 'limited')
    }))

    it('When a subject is banned, then its banned requests charge no window', () => withStore(async (store) => {
      // Arrange: one admitted request, then refusals that earn a ban until T0 + 2 + 10 s.
      const r = request(1, 100, { threshold: 3, seconds: 10 })
      await store.hit(r, T0)
      for (let i = 0; i < 3; i++) await store.hit(r, T0 + i)
      for (let i = 0; i < 5; i++) assert.equal((await store.hit(r, T0 + 10 + i)).outcome, 'banned')

      // Act: the next minute, after the ban.
      const after = await store.hit(r, Date.parse('2027-03-10T12:01:00Z'))

      // Assert: the day window holds the request before the ban and this one.
      assert.equal(after.outcome, 'allowed')
      assert.equal(after.windows[1]?.remaining, 98)
    }))

    it('When there is no ban policy, then refusals never ban', () => withStore(async (store) => {
      const r = { ...request(1, 100), ban: undefined }
      await store.hit(r, T0)
      for (let i = 0; i < 10; i++) assert.equal((await store.hit(r, T0 + i)).outcome, 'limited')
    }))

    it('When many requests race for the last units, then exactly the limit is admitted', () => withStore(async (store) => {
      const r = request(25, 1000)
      const decisions = await Promise.all(Array.from({ length: 100 }, () => store.hit(r, T0)))
      assert.equal(decisions.filter((d) => d.outcome === 'allowed').length, 25)
    }))

    it('When the store has just opened and works, then its health is ok', () => withStore(async (store) => {
      const health = await store.health()

      assert.deepEqual(health, { status: 'ok' })
    }))
  })
}
