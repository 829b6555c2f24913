// The rule's two copies held to each other (docs/INTERNALS.md, section "The
// rule"): rule.ts, which both in-process stores call, and the Redis store's
// Lua script, run on a real Redis. Both play the same random sequences of
// hits and looks, at instants the test chooses, and must decide alike.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { decisionOf, hitArguments, hitScript } from '../../src/limits/redis-store.js'
import { decide, RULE_FIELDS } from '../../src/limits/rule.js'
import type { HitRequest, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { openTestClient } from '../support/redis.js'

/**
 * The script's clock for this test: `now` from the last ARGV, which the rule
 * never reads (its ARGV end with the windows'), in place of Redis's TIME.
 */
const GIVEN_NOW = '\nlocal now = tonumber(ARGV[#ARGV])'

// Two subjects, each with windows of its own for the run, as a key has its plan's: each sees many hits, so that sequences reach a ban, its end and what follows it.
const SUBJECTS = ['key:1', 'addr:2001:db8:0:1::/64'] as const
const WINDOWS: WindowLimit[][] = [
  [{ window: 'minute', limit: 1 }, { window: 'day', limit: 3 }],
  [{ window: 'minute', limit: 2 }, { window: 'day', limit: 2 }],
  [{ window: 'minute', limit: 2 }],
  [{ window: 'day', limit: 4 }]
]
const plans = fc.tuple(fc.constantFrom(...WINDOWS), fc.constantFrom(...WINDOWS))
// A policy a run, as the service has: mostly a ban, often one earned at the first or second refusal.
const bans = fc.option(fc.record({ threshold: fc.integer({ min: 1, max: 3 }), seconds: fc.constantFrom(1, 5, 60, 900) }), { nil: undefined, freq: 4 })
// Steps that cross a millisecond, a ban's end (a second's steps land on it), a minute and a day.
const hits = fc.array(fc.record({
  subject: fc.constantFrom(0, 1),
  step: fc.constantFrom(0, 0, 0, 1, 999, 1_000, 5_000, 30_000, 60_000, 3_600_000, 86_400_000),
  charge: fc.constantFrom(true, true, true, false)
}), { maxLength: 60 })

describe('the rate-limit rule against the Redis store\'s script', () => {
  it('When any sequence of hits and looks, across minutes, days and bans, is played by rule.ts and by the script on Redis, then every decision is the same', async () => {
    // Arrange
    const client = await openTestClient('single')
    const script = hitScript(GIVEN_NOW)
    let runs = 0

    try {
      await fc.assert(fc.asyncProperty(bans, plans, hits, async (ban, plans, hits) => {
        // Keys of this run's own, deleted after it: their expiries are counted on Redis's clock, not the test's.
        const prefix = `petstore:rule-vs-lua-${process.pid}-${runs++}:`
        const states = new Map<string, Float64Array>()
        const written = new Set<string>()
        let now = CLOCK_START
        try {
          for (const [i, { subject: which, step, charge }] of hits.entries()) {
            now += step
            const subject = SUBJECTS[which]
            const request: HitRequest = { subject, windows: plans[which], ban, charge }
            let state = states.get(subject)
            if (state === undefined) states.set(subject, state = new Float64Array(RULE_FIELDS))

            // Act
            const expected = decide(state, 0, request, now)
            const { keys, args } = hitArguments(`${prefix}{${subject}}:`, request)
            for (const key of keys) written.add(key)
            const reply: unknown = await client.eval(script, keys.length, ...keys, ...args, String(now))

            // Assert: on Redis's side the answer arrives at `now`, so its instants are read as they are.
            assert.deepEqual(decisionOf(reply, request, now), expected, `hit ${i} at now + ${now - CLOCK_START} ms`)
          }
        } finally {
          if (written.size > 0) await client.del(...written)
        }
      }), { numRuns: 500 })
    } finally {
      client.disconnect()
    }
  })
})
