// When a failed delivery goes again (docs/WEBHOOKS.md: Answers, retries and order): backing off
// exponentially with jitter, honouring a 429's Retry-After, never after a
// final answer, and given up about three days after its event.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { GIVE_UP_AFTER_MS, nextAttempt } from '../../src/webhooks/dispatcher.js'

const NOW = Date.parse('2027-03-10T12:00:00Z')
const failure = { ok: false as const, final: false, status: 500, error: 'HTTP 500' }

describe('the retries of a webhook delivery', () => {
  it('When attempts fail, then each waits between half and all of 30 s doubled per attempt, up to 12 h', () => {
    for (const [attempts, full] of [[1, 30_000], [2, 60_000], [5, 480_000], [20, 12 * 3_600_000]] as const) {
      assert.equal(nextAttempt(failure, attempts, NOW, NOW, () => 0), NOW + full / 2)
      assert.equal(nextAttempt(failure, attempts, NOW, NOW, () => 1), NOW + full)
    }
  })

  it('When a 429 says Retry-After, then the next attempt waits at least that long', () => {
    assert.equal(nextAttempt({ ...failure, status: 429, retryAfterMs: 600_000 }, 1, NOW, NOW, () => 1), NOW + 600_000)
  })

  it('When the answer is final, then no attempt follows', () => {
    assert.equal(nextAttempt({ ...failure, final: true, status: 410 }, 1, NOW, NOW, () => 0), undefined)
  })

  it('When the next attempt would come more than three days after the event, then the delivery is given up', () => {
    const createdAt = NOW - GIVE_UP_AFTER_MS + 60_000
    assert.equal(nextAttempt(failure, 1, createdAt, NOW, () => 0), NOW + 15_000)
    assert.equal(nextAttempt(failure, 4, createdAt, NOW, () => 0), undefined)
  })

  it('When retries run their course, then they span about three days', () => {
    let at = NOW
    let attempts = 0
    for (let next: number | undefined = NOW; next !== undefined; next = nextAttempt(failure, attempts, NOW, at, () => 0.5)) {
      at = next
      attempts++
    }
    assert.ok(at - NOW > 2.5 * 24 * 3_600_000 && at - NOW <= GIVE_UP_AFTER_MS, `the last attempt ${(at - NOW) / 3_600_000} h after the event`)
    assert.ok(attempts >= 12 && attempts <= 20, `${attempts} attempts`)
  })
})
