// API tokens: `pet_live_` or `pet_test_`, 30 base62 characters of randomness
// (178 bits), then a 6-character base62 CRC32, as GitHub's have: a mistyped token is
// refused without a lookup, and scanners recognise a leaked one. The one
// place that knows the token's shape (docs/INTERNALS.md, section "Tokens").
import { hash, randomInt } from 'node:crypto'
import { crc32 } from 'node:zlib'
import type { Environment } from '../domain.js'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_LENGTH = 30
const CHECKSUM_LENGTH = 6

const TOKEN_PREFIX: Record<Environment, string> = {
  production: 'pet_live_',
  staging: 'pet_test_'
}

const TOKEN_SHAPE = /^pet_(live|test)_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/
const SECRET_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH

export function generateToken (environment: Environment): string {
  let random = ''
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)]
  const body = TOKEN_PREFIX[environment] + random
  return body + checksum(body)
}

type TokenCheck =
  | { ok: true, environment: Environment }
  | { ok: false }

/** Checks a token's shape and checksum; says which environment it belongs to. */
export function inspectToken (token: string): TokenCheck {
  const match = TOKEN_SHAPE.exec(token)
  if (match === null) return { ok: false }
  const body = token.slice(0, -CHECKSUM_LENGTH)
  if (checksum(body) !== match[3]) return { ok: false }
  return { ok: true, environment: match[1] === 'live' ? 'production' : 'staging' }
}

/** What people tell keys apart by: the prefix and the last four characters (`pet_live_…Wx3k`), never enough to use. */
export function tokenHint (token: string): string {
  return `${token.slice(0, token.indexOf('_', 4) + 1)}…${token.slice(-4)}`
}

/**
 * What is stored instead of the token. A token carries 178 random bits, so a
 * fast hash cannot be brute-forced; a slow password hash would only slow
 * every request. `crypto.hash` is the one-shot form, without a Hash
 * object: 0.26 µs a token against createHash's 0.70 (docs/PERFORMANCE.md).
 */
export function hashToken (token: string): string {
  return hash('sha256', token)
}

function checksum (text: string): string {
  let value = crc32(text)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out
    value = Math.floor(value / 62)
  }
  return out
}

/**
 * A prefix, in any case, and the base62 run after it, however short: what a
 * log must not show even when the rest was cut off or mistyped.
 */
const PREFIXED = /pet_(?:live|test)_[0-9a-z]*/gi
/** Whether PREFIXED can match at all: `matchAll` copies its expression on every call, which a log line paid for every URL. */
export const HAS_PREFIX = /pet_(?:live|test)_/i

/**
 * Percent-encoding is undone this many times: once for a client's own
 * encoding, and again for each layer (a proxy, a redirect) that encoded the
 * `%` once more. Each round is linear in the text.
 */
const DECODING_ROUNDS = 3

export interface TokenSighting {
  /** Where it is in the text as written, before any decoding: `text.slice(start, end)`. */
  start: number
  end: number
  /** Whether it begins with `pet_live_`/`pet_test_`; otherwise it is a bare secret whose checksum holds. */
  prefixed: boolean
  /** How many characters of the secret (random part and checksum) were seen. */
  secretLength: number
}

/**
 * Every token, or part of one, in a client's text or a log line: `pet_live_…`/`pet_test_…`,
 * however short, and a 36-character base62 secret whose checksum holds without its
 * prefix. The text is percent-decoded first, up to three times over, a malformed `%`
 * sequence kept as it is. Linear in the text's length.
 */
export function findTokens (text: string): TokenSighting[] {
  let decoded = text
  // Where each decoded character was written in `text`; undefined while nothing was decoded.
  let origin: number[] | undefined
  for (let round = 0; round < DECODING_ROUNDS && decoded.includes('%'); round++) {
    const next = percentDecode(decoded)
    if (next.text.length === decoded.length) break
    const previous = origin
    origin = previous === undefined ? next.origin : next.origin.map((at) => previous[at] ?? text.length)
    decoded = next.text
  }
  const at = (index: number): number => origin === undefined ? index : origin[index] ?? text.length
  const found: TokenSighting[] = []
  for (const match of HAS_PREFIX.test(decoded) ? decoded.matchAll(PREFIXED) : []) {
    const start = match.index
    const end = start + match[0].length
    found.push({ start: at(start), end: at(end), prefixed: true, secretLength: match[0].length - TOKEN_PREFIX.production.length })
  }
  for (const start of checksummedSecrets(decoded)) {
    found.push({ start: at(start), end: at(start + SECRET_LENGTH), prefixed: false, secretLength: SECRET_LENGTH })
  }
  return found.sort((a, b) => a.start - b.start)
}

/**
 * Where a secret with a valid checksum starts: a base62 run of 36, or the first
 * or last 36 of a longer run, since a pasted secret sits next to a separator or an
 * end, and every window of a long run would cost milliseconds. A loop: a checksum is no pattern.
 */
function checksummedSecrets (text: string): number[] {
  const starts: number[] = []
  let runStart = 0
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && isBase62(text.charCodeAt(i))) continue
    if (i - runStart >= SECRET_LENGTH) {
      if (isSecret(text, runStart)) starts.push(runStart)
      if (i - SECRET_LENGTH > runStart && isSecret(text, i - SECRET_LENGTH)) starts.push(i - SECRET_LENGTH)
    }
    runStart = i + 1
  }
  return starts
}

function isSecret (text: string, start: number): boolean {
  const random = text.slice(start, start + RANDOM_LENGTH)
  const sum = text.slice(start + RANDOM_LENGTH, start + SECRET_LENGTH)
  return checksum(TOKEN_PREFIX.production + random) === sum || checksum(TOKEN_PREFIX.staging + random) === sum
}

function isBase62 (code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)
}

/**
 * One round of percent-decoding of ASCII (`%5F` is `_`); every other
 * sequence, malformed (`%zz`, a lone `%`) or not ASCII, is kept as written,
 * so this never throws, unlike `decodeURIComponent`. A token is ASCII: no
 * other byte needs decoding to find one.
 */
function percentDecode (text: string): { text: string, origin: number[] } {
  let out = ''
  const origin: number[] = []
  let i = 0
  while (i < text.length) {
    const code = text[i] === '%' && isHexPair(text, i + 1) ? Number.parseInt(text.slice(i + 1, i + 3), 16) : 0x80
    origin.push(i)
    if (code < 0x80) {
      out += String.fromCharCode(code)
      i += 3
    } else {
      out += text[i]
      i++
    }
  }
  origin.push(text.length)
  return { text: out, origin }
}

function isHexPair (text: string, at: number): boolean {
  return isHex(text.charCodeAt(at)) && isHex(text.charCodeAt(at + 1))
}

function isHex (code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66)
}
