import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createBanLog } from '../../src/limits/ban-log.js'

function recordingLogger (): { logger: { warn: (f: object, m: string) => void, info: (f: object, m: string) => void }, lines: Array<[string, object, string]> } {
  const lines: Array<[string, object, string]> = []
  return {
    lines,
    logger: {
      warn: (fields, message) => { lines.push(['warn', fields, message]) },
      info: (fields, message) => { lines.push(['info', fields, message]) }
    }
  }
}

describe('the ban log', () => {
  it('When a key is banned, then one line says until when, and one more when the ban ends, not before', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const { logger, lines } = recordingLogger()
    const now = 1_000_000
    const bans = createBanLog(logger, () => now)

    bans.started(7, now + 60_000)
    t.mock.timers.tick(59_999)
    const beforeTheEnd = lines.length
    t.mock.timers.tick(1)

    assert.equal(beforeTheEnd, 1)
    assert.deepEqual(lines[0]?.slice(0, 2), ['warn', { keyId: 7, bannedUntil: new Date(now + 60_000).toISOString() }])
    assert.deepEqual(lines[1]?.slice(0, 2), ['info', { keyId: 7 }])
    assert.match(lines[1]?.[2] ?? '', /ban ended/)
  })

  it('When the instance stops before a ban ends, then the end is not logged afterwards', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const { logger, lines } = recordingLogger()
    const bans = createBanLog(logger, () => 0)

    bans.started(7, 60_000)
    bans.close()
    t.mock.timers.tick(120_000)

    assert.equal(lines.length, 1)
  })
})
