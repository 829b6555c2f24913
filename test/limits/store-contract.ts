// One suite for every rate-limit store: each backend must decide alike. It
// runs on the real clock, since the Redis store decides on Redis's own: every
// test acts at one instant (the day window binds where a test needs a limit
// that holds while it runs, so that no minute edge falls inside it). What
// happens across minutes and bans is tested per store: on a clock the test
// moves for the in-process store, on state as an earlier minute left it for
// Redis.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { WINDOW_MS } from '../../src/domain.js'
import type { HitRequest, RateLimitStore } from '../../src/limits/store.js'
import { awayFromMinuteEdge } from '../support/redis.js'

export function rateLimitStoreContract (name: string, open: () => Promise<RateLimitStore>): void {
  describe(`rate-limit store contract: ${name}`, () => {
    let n = 0
    const request = (perMinute: number, perDay: number, ban = { threshold: 3, seconds: 60 }): HitRequest => ({
      subject: `key:contract-${name}-${process.pid}-${Date.now()}-${n++}`,
      windows: [{ window: 'minute', limit: perMinute }, { window: 'day', limit: perDay }],
      ban
    })
    /** The same subject, with limits high enough to be admitted: its decision tells what each window holds. */
    const probe = (r: HitRequest): HitRequest => ({ ...r, windows: r.windows.map(({ window }) => ({ window, limit: 1000 })) })
    const withStore = async (work: (store: RateLimitStore) => Promise<void>) => {
      const store = await open()
      try { await work(store) } finally { await store.close() }
    }

    it('When under both limits, then allowed, one unit is charged to each window, and each resets at its end', () => withStore(async (store) => {
      const r = request(2, 10)
      const now = Date.now()
      const decision = await store.hit(r, now)
      const answered = Date.now()
      assert.equal(decision.outcome, 'allowed')
      assert.deepEqual(decision.windows.map((w) => [w.window, w.remaining]), [['minute', 1], ['day', 9]])
      for (const w of decision.windows) {
        // The store's window may have begun as late as the answer, on its own clock; its reset is read on ours.
        const left = w.resetAt - now
        assert.ok(left > 0 && left <= WINDOW_MS[w.window] + (answered - now) + 1, `the ${w.window} resets ${left} ms after now`)
      }
    }))

    it('When a request only looks (charge: false), then it sees each window as it is and charges nothing, even when a window is full', () => withStore(async (store) => {
      const r = request(10, 2)
      const looked = await store.hit({ ...r, charge: false }, Date.now())
      await store.hit(r, Date.now())
      const again = await store.hit({ ...r, charge: false }, Date.now())
      await store.hit(r, Date.now())
      const full = await store.hit({ ...r, charge: false }, Date.now())
      const after = await store.hit(probe(r), Date.now())
      assert.deepEqual([looked.outcome, again.outcome, full.outcome], ['allowed', 'allowed', 'limited'])
      assert.deepEqual(looked.windows.map((w) => w.remaining), [10, 2], 'a look at a new subject shows every window whole')
      assert.deepEqual(again.windows.map((w) => w.remaining), [9, 1])
      assert.deepEqual(full.windows.map((w) => w.remaining), [8, 0])
      assert.deepEqual(after.windows.map((w) => 1000 - w.remaining), [3, 3], 'each window holds the two charged requests and the probe, not the looks')
    }))

    it('When a subject at its limit only looks, again and again, then no refusal counts towards a ban', () => withStore(async (store) => {
      const r = request(10, 1, { threshold: 2, seconds: 60 })
      await awayFromMinuteEdge(2000)
      await store.hit(r, Date.now())
      for (let i = 0; i < 5; i++) assert.equal((await store.hit({ ...r, charge: false }, Date.now())).outcome, 'limited')
      assert.equal((await store.hit(r, Date.now())).outcome, 'limited', 'the first real refusal is not a ban: the looks counted nothing')
    }))

    it('When one window is full, then limited and neither window is charged', () => withStore(async (store) => {
      const r = request(10, 1)
      const admitted = await store.hit(r, Date.now())
      const refused = await store.hit(r, Date.now())
      const after = await store.hit(probe(r), Date.now())
      assert.deepEqual([admitted.outcome, refused.outcome, after.outcome], ['allowed', 'limited', 'allowed'])
      assert.deepEqual(after.windows.map((w) => 1000 - w.remaining), [2, 2], 'each window holds the admitted request and the probe, not the refused one')
    }))

    it('When refusals reach the threshold in one minute, then that refusal says it earned a ban, until when, and the next request is banned', () => withStore(async (store) => {
      const r = request(10, 1)
      await awayFromMinuteEdge(2000)
      await store.hit(r, Date.now())

      const refusals = []
      let before = 0
      let after = 0
      for (let i = 0; i < 3; i++) {
        before = Date.now()
        refusals.push(await store.hit(r, before))
        after = Date.now()
      }
      const banned = await store.hit(r, Date.now())
      const last = Date.now()

      const earned = refusals.map((d) => d.outcome === 'limited' ? d.banEarnedUntil : 'not limited')
      assert.deepEqual(earned.slice(0, 2), [undefined, undefined])
      const until = earned[2]
      assert.ok(typeof until === 'number' && until >= before + 60_000 && until <= after + 60_000 + 1, `the ban earned lasts until ${String(until)}, 60 s from the refusal`)
      assert.equal(banned.outcome, 'banned')
      // The same end, read on this side's clock as the store sees it now (on Redis, within a round trip of the first reading).
      const bannedUntil = banned.outcome === 'banned' ? banned.bannedUntil : 0
      assert.ok(bannedUntil >= before + 60_000 && bannedUntil <= last + 60_000 + 1, `banned until ${bannedUntil}, the ban that refusal earned`)
    }))

    it('When a subject is banned, then its banned requests charge no window', () => withStore(async (store) => {
      // Arrange: one admitted request, then refusals that earn a ban.
      const r = request(1, 100, { threshold: 3, seconds: 60 })
      await awayFromMinuteEdge(2000)
      await store.hit(r, Date.now())
      for (let i = 0; i < 3; i++) await store.hit(r, Date.now())

      // Act
      const banned = []
      for (let i = 0; i < 5; i++) banned.push(await store.hit(r, Date.now()))

      // Assert: each banned request saw the day as the admitted request left it.
      assert.deepEqual(banned.map((d) => [d.outcome, d.windows[1]?.remaining]), Array(5).fill(['banned', 99]))
    }))

    it('When there is no ban policy, then refusals never ban', () => withStore(async (store) => {
      const r = { ...request(10, 1), ban: undefined }
      await store.hit(r, Date.now())
      for (let i = 0; i < 10; i++) assert.equal((await store.hit(r, Date.now())).outcome, 'limited')
    }))

    it('When many requests race for the last units, then exactly the limit is admitted, each sees a count of its own, and only they are charged', () => withStore(async (store) => {
      // Arrange: the day binds, so that no minute edge falls inside the race; no ban, which the refusals would earn.
      const r = { ...request(1000, 25), ban: undefined }

      // Act
      const now = Date.now()
      const decisions = await Promise.all(Array.from({ length: 100 }, async () => await store.hit(r, now)))
      const after = await store.hit(probe(r), Date.now())

      // Assert
      const admitted = decisions.filter((d) => d.outcome === 'allowed')
      assert.equal(admitted.length, 25)
      assert.deepEqual(admitted.map((d) => d.windows[1]?.remaining).sort((x = 0, y = 0) => x - y), Array.from({ length: 25 }, (_, i) => i))
      assert.equal(1000 - (after.windows[1]?.remaining ?? 0), 26, 'the day holds the 25 admitted and the probe')
    }))

    it('When the store has just opened and works, then its health is ok', () => withStore(async (store) => {
      const health = await store.health()

      assert.deepEqual(health, { status: 'ok' })
    }))
  })
}
