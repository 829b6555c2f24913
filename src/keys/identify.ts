// Who is calling: the bearer token, checked on its shape, then looked up.
// Plain functions of a header value, with no web framework in them: the
// gate (plugins/gate.ts) reads the token, counts the request, and only
// then answers 401 when there is no caller.
// https://www.rfc-editor.org/rfc/rfc6750#section-3
import { Errors, StorageUnavailableError, type ApiError } from '../errors.js'
import type { Environment } from '../domain.js'
import type { KeyLookup } from './lookup.js'
import { hashToken, inspectToken } from './tokens.js'
import type { Caller } from '../limits/limit.js'
import { concurrencyFor, limitsFor } from '../limits/plans.js'

/** The SHA-256 of a well-formed token of this environment's. */
interface TokenHash {
  tokenHash: string
}

export interface Identify {
  /**
   * The token the Authorization header carries, or why it carries none
   * that could be a key: its shape, checksum and environment, with no I/O.
   * `headers` counts how many Authorization headers the request had.
   */
  read: (authorization: string | undefined, headers?: number) => TokenHash | ApiError
  /** False when certainly no key had this token when it was asked: it need not be looked up to be refused. */
  mayExist: (token: TokenHash) => Promise<boolean>
  /** The caller the token belongs to, or why there is none. */
  find: (token: TokenHash) => Promise<Caller | ApiError>
}

/**
 * The token must start with a non-space: with `(?: +(.*))?` a run of spaces
 * could be split between the two in as many ways as it is long, and a
 * header that then fails to match took quadratic time.
 */
export const BEARER = /^Bearer(?: +([^ ].*)?)?$/i
const TOKEN = /^[^ ]+$/

/** How many Authorization headers a request carries: Node keeps only the first. Read by the gate and the admin listener alike. */
export function authorizationHeaders (raw: readonly string[]): number {
  let count = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++
  }
  return count
}

/** Reads an Authorization header as far as can be done without a lookup. */
function readToken (header: string | undefined, environment: Environment, headers = header === undefined ? 0 : 1): TokenHash | ApiError {
  // Node keeps the first of two Authorization headers: which one the
  // client meant is not ours to guess.
  if (headers > 1) return Errors.manyAuthorizations()
  if (header === undefined || header.trim() === '') return Errors.noKey()
  const bearer = BEARER.exec(header.trim())
  if (bearer === null) return Errors.notBearer()
  const token = bearer[1]?.trim() ?? ''
  if (token === '') return Errors.emptyBearer()
  if (!TOKEN.test(token)) return Errors.manyKeys()
  const shape = inspectToken(token)
  if (!shape.ok) return Errors.notAKey()
  if (shape.environment !== environment) return Errors.keyOfOtherEnvironment(shape.environment, environment)
  return { tokenHash: hashToken(token) }
}

export function createIdentify ({ environment, keys, now }: { environment: Environment, keys: Pick<KeyLookup, 'find' | 'mayExistNow'>, now: () => number }): Identify {
  return {
    read: (header, headers) => readToken(header, environment, headers),
    mayExist: async ({ tokenHash }) => await keys.mayExistNow(tokenHash),
    async find ({ tokenHash }) {
      try {
        const match = await keys.find(tokenHash)
        if (match === undefined) return Errors.unknownKey()
        const { key } = match
        // Both checked on every request, after the cache: a key cached a
        // moment before its expiry, or a rolled-away token a moment before
        // its overlap ends, is refused from that instant on, not up to a
        // cache lifetime later.
        if (key.expiresAt !== null && now() >= key.expiresAt) return Errors.expiredKey(new Date(key.expiresAt))
        if (match.previous && (key.previousTokenExpiresAt === null || now() >= key.previousTokenExpiresAt)) return Errors.unknownKey()
        return { key, limits: limitsFor(key.plan, key), concurrency: concurrencyFor(key.plan, key) }
      } catch (error) {
        // Counted as anonymous, then answered 503: the key could not be checked.
        if (error instanceof StorageUnavailableError) return Errors.storageUnavailable()
        throw error
      }
    }
  }
}
