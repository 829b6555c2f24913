// The token's shape as docs/KEYS.md gives it to secret scanners ("The
// token's shape, for scanners"): its expressions, and its checksum
// computed here from the docs' words, match every token the service makes
// and none of a corpus of near misses.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { crc32 } from 'node:zlib'
import { generateToken } from '../../src/keys/tokens.js'

const DOCS = readFileSync(new URL('../../../docs/KEYS.md', import.meta.url), 'utf8')
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** The expression the docs give for an environment, held whole: a scanner matches the whole string. */
function documented (environment: 'production' | 'staging'): RegExp {
  const row = new RegExp(`^\\| ${environment} \\| \`([^\`]+)\` \\|$`, 'm').exec(DOCS)
  assert.ok(row?.[1] !== undefined, `docs/KEYS.md gives no expression for ${environment}`)
  return new RegExp(`^(?:${row[1]})$`)
}

/** The checksum as the docs describe it: CRC32 of what precedes it, base62, most significant first, 6 digits. */
function checksumHolds (token: string): boolean {
  let value = crc32(token.slice(0, -6))
  let digits = ''
  for (let i = 0; i < 6; i++) {
    digits = BASE62[value % 62] + digits
    value = Math.floor(value / 62)
  }
  return token.slice(-6) === digits
}

const PRODUCTION = documented('production')
const STAGING = documented('staging')
const isOurs = (pattern: RegExp, text: string): boolean => pattern.test(text) && checksumHolds(text)

describe('the token\'s documented shape', () => {
  it('When the service makes 5,000 tokens in each environment, then each matches its environment\'s expression and checksum, and not the other\'s', () => {
    for (let i = 0; i < 5000; i++) {
      const live = generateToken('production')
      const test = generateToken('staging')
      assert.ok(isOurs(PRODUCTION, live), live)
      assert.ok(isOurs(STAGING, test), test)
      assert.ok(!PRODUCTION.test(test), test)
      assert.ok(!STAGING.test(live), live)
    }
  })

  it('When a text is a near miss, then the expressions and the checksum together take none of it', () => {
    const live = generateToken('production')
    const body = live.slice(0, -6)
    const flip = (c: string): string => c === 'a' ? 'b' : 'a'
    const corpus: Array<[string, string]> = [
      ['a wrong checksum', `${body}${flip(live.at(-1) ?? '')}${live.slice(-5)}`.slice(0, live.length)],
      ['a changed random character', `${body.slice(0, 12)}${flip(body[12] ?? '')}${body.slice(13)}${live.slice(-6)}`],
      ['truncated', live.slice(0, -1)],
      ['one character more', `${live}a`],
      ['an uppercase prefix', live.replace('pet_live_', 'PET_LIVE_')],
      ['another prefix', live.replace('pet_live_', 'pet_prod_')],
      ['no prefix', live.slice('pet_live_'.length)],
      ['a hyphen for an underscore', live.replace('pet_live_', 'pet-live_')],
      ['a character outside base62', `${live.slice(0, 20)}-${live.slice(21)}`],
      ['the staging prefix on a production body', live.replace('pet_live_', 'pet_test_')],
      ['empty', ''],
      ['the prefix alone', 'pet_live_']
    ]
    for (const [what, text] of corpus) {
      assert.ok(!isOurs(PRODUCTION, text), `${what}: ${text}`)
      // A staging prefix on a production body may match the expression, never the checksum.
      assert.ok(!isOurs(STAGING, text), `${what} (staging): ${text}`)
    }
    // A wrong checksum still has the shape: the checksum alone tells those two apart.
    // Every other near miss the production expression refuses by itself.
    for (const [what, text] of corpus.slice(0, 2)) assert.ok(PRODUCTION.test(text), what)
    for (const [what, text] of corpus.slice(2)) assert.ok(!PRODUCTION.test(text), `${what}: ${text}`)
  })
})
