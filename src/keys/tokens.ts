// API tokens: `pet_live_` or `pet_test_`, 30 base62 characters of randomness
// (178 bits), then a 6-character base62 CRC32 of everything before it, as
// GitHub's tokens have: a mistyped token is refused without a database
// lookup, and secret scanners can recognise a leaked one.
// https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/
import { createHash, randomInt } from 'node:crypto'
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

/**
 * What is stored instead of the token. A token carries 178 random bits, so a
 * fast hash cannot be brute-forced; a slow password hash would only slow
 * every request.
 */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
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
