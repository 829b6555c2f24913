// DEPRECATION_BROWNOUTS read once at start (docs/OPERATING.md: Brownouts): the
// intervals it takes, those it refuses, and the brownout under way at an instant.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, loadConfig } from '../src/config.js'
import { MAX_BROWNOUTS, brownoutAt, readBrownouts, type Brownout } from '../src/deprecations.js'

const at = (iso: string): number => Date.parse(iso)

function brownoutsOf (text: string): Brownout[] {
  const reading = readBrownouts(text)
  assert.ok(reading.ok, reading.ok ? '' : reading.reason)
  return reading.brownouts
}

function refusal (text: string): string {
  const reading = readBrownouts(text)
  assert.ok(!reading.ok, `"${text}" was taken`)
  return reading.reason
}

describe('brownouts', () => {
  it('When intervals are given out of order, with spaces, then each is read in UTC and they are sorted by start', () => {
    const brownouts = brownoutsOf(' 2030-06-02T14:00:00Z/2030-06-02T15:00:00Z ,2030-06-01T14:00:00.5Z/2030-06-01T14:30:00Z,')

    assert.deepEqual(brownouts, [
      { start: at('2030-06-01T14:00:00.500Z'), end: at('2030-06-01T14:30:00Z'), text: '2030-06-01T14:00:00.5Z/2030-06-01T14:30:00Z' },
      { start: at('2030-06-02T14:00:00Z'), end: at('2030-06-02T15:00:00Z'), text: '2030-06-02T14:00:00Z/2030-06-02T15:00:00Z' }
    ])
  })

  it('When one interval ends where the next starts, then both are taken: each excludes its end', () => {
    const brownouts = brownoutsOf('2030-06-01T14:00:00Z/2030-06-01T15:00:00Z,2030-06-01T15:00:00Z/2030-06-01T16:00:00Z')

    assert.equal(brownoutAt(brownouts, at('2030-06-01T14:59:59.999Z'))?.end, at('2030-06-01T15:00:00Z'))
    assert.equal(brownoutAt(brownouts, at('2030-06-01T15:00:00Z'))?.end, at('2030-06-01T16:00:00Z'))
    assert.equal(brownoutAt(brownouts, at('2030-06-01T16:00:00Z')), undefined)
    assert.equal(brownoutAt(brownouts, at('2030-06-01T13:59:59.999Z')), undefined)
  })

  it('When two intervals overlap, then the list is refused, naming both', () => {
    const reason = refusal('2030-06-01T14:00:00Z/2030-06-01T16:00:00Z,2030-06-03T00:00:00Z/2030-06-03T01:00:00Z,2030-06-01T15:59:59Z/2030-06-01T17:00:00Z')
    assert.match(reason, /"2030-06-01T14:00:00Z\/2030-06-01T16:00:00Z" and "2030-06-01T15:59:59Z\/2030-06-01T17:00:00Z" overlap/)
    // One inside another overlaps too.
    assert.match(refusal('2030-06-01T14:00:00Z/2030-06-01T18:00:00Z,2030-06-01T15:00:00Z/2030-06-01T16:00:00Z'), /overlap/)
  })

  it('When an interval ends before or when it starts, then it is refused', () => {
    assert.match(refusal('2030-06-01T15:00:00Z/2030-06-01T14:00:00Z'), /"2030-06-01T15:00:00Z\/2030-06-01T14:00:00Z" ends before it starts/)
    assert.match(refusal('2030-06-01T15:00:00Z/2030-06-01T15:00:00Z'), /ends before it starts, or when it starts/)
  })

  it('When an end is not an RFC 3339 time in UTC, or an item is not START/END, then it is refused, naming it', () => {
    for (const [text, reason] of [
      ['2030-06-01T14:00:00+02:00/2030-06-01T16:00:00Z', /"2030-06-01T14:00:00\+02:00" .* is not in UTC/],
      ['2030-06-01T14:00:00/2030-06-01T16:00:00Z', /must be an RFC 3339 time/],
      ['2030-06-01/2030-06-02', /must be an RFC 3339 time/],
      ['2030-02-30T14:00:00Z/2030-03-01T16:00:00Z', /must be an RFC 3339 time that exists/],
      ['2030-06-01T14:00:00Z/PT1H', /"PT1H" in .* must be an RFC 3339 time/],
      ['2030-06-01T14:00:00Z', /is not an interval START\/END/],
      ['2030-06-01T14:00:00Z/2030-06-01T15:00:00Z/2030-06-01T16:00:00Z', /is not an interval START\/END/],
      ['tomorrow', /is not an interval START\/END/]
    ] as const) {
      assert.match(refusal(text), reason, text)
    }
  })

  it(`When more than ${MAX_BROWNOUTS} intervals are given, then the list is refused`, () => {
    const many = Array.from({ length: MAX_BROWNOUTS + 1 }, (_, i) => `2030-01-01T${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00Z/2030-01-01T${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:30Z`)
    assert.equal(brownoutsOf(many.slice(0, MAX_BROWNOUTS).join(',')).length, MAX_BROWNOUTS)
    assert.match(refusal(many.join(',')), /more than 100/)
  })

  it('When DEPRECATION_BROWNOUTS is bad, then the configuration is refused with a message naming the variable; unset or empty, there are none', () => {
    for (const bad of ['2030-06-01T15:00:00Z/2030-06-01T14:00:00Z', '2030-06-01T14:00:00Z/2030-06-01T16:00:00Z,2030-06-01T15:00:00Z/2030-06-01T17:00:00Z', 'soon']) {
      assert.throws(() => loadConfig({ DEPRECATION_BROWNOUTS: bad }), (error: unknown) => error instanceof ConfigError && error.message.startsWith('DEPRECATION_BROWNOUTS must be'), bad)
    }
    assert.deepEqual(loadConfig({}).deprecationBrownouts, [])
    assert.deepEqual(loadConfig({ DEPRECATION_BROWNOUTS: ' ' }).deprecationBrownouts, [])
    assert.equal(loadConfig({ DEPRECATION_BROWNOUTS: '2030-06-01T14:00:00Z/2030-06-01T15:00:00Z' }).deprecationBrownouts.length, 1)
    assert.ok(Object.isFrozen(loadConfig({}).deprecationBrownouts))
  })
})
