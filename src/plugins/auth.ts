// Who is calling: the bearer token, checked and looked up. The gate
// (access.ts) identifies every /v1 request first, so that the rate limiter
// knows whom to count, and refuses it with 401 once it has been counted.
// https://www.rfc-editor.org/rfc/rfc6750#section-3
import type { FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { ApiError, Errors, StorageUnavailableError } from '../errors.js'
import type { Environment } from '../domain.js'
import type { ApiKeyRecord, Storage } from '../db/storage.js'
import { hashToken, inspectToken } from '../keys/tokens.js'
import { limitsFor, type Limits } from '../limits/plans.js'

interface Caller {
  key: ApiKeyRecord
  limits: Limits
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key of this request, once authenticated. */
    caller: Caller | undefined
    /** Why the request has no caller: the answer it gets once it has been counted. */
    authFailure: ApiError | undefined
  }
}

export interface AuthenticatorOptions {
  storage: Storage
  environment: Environment
  now: () => number
}

/** Sets `request.caller`, or `request.authFailure` saying why there is none. */
export type Identify = (request: FastifyRequest) => Promise<void>

/** A revoked key is refused by every instance within this long. */
const CACHE_MS = 500
/** Lookups remembered at once; the least recently used go first. */
const CACHE_MAX = 10_000
// The token must start with a non-space: with `(?: +(.*))?` a run of spaces
// could be split between the two in as many ways as it is long, and a
// header that then fails to match took quadratic time.
const BEARER = /^Bearer(?: +([^ ].*)?)?$/i
const TOKEN = /^[^ ]+$/

export function createAuthenticator ({ storage, environment, now }: AuthenticatorOptions): Identify {
  // Unknown tokens are remembered too (as `caller: undefined`), so that
  // guessing costs no more lookups than using a real key.
  const cache = new LRUCache<string, { caller: Caller | undefined }>({
    max: CACHE_MAX,
    ttl: CACHE_MS,
    // The injected clock, read on every lookup: a revocation must show within CACHE_MS.
    perf: { now },
    ttlResolution: 0
  })

  async function findCaller (tokenHash: string): Promise<Caller | undefined> {
    const hit = cache.get(tokenHash)
    if (hit !== undefined) return hit.caller
    const key = await storage.findApiKeyByTokenHash(tokenHash)
    const caller = key === undefined || key.revokedAt !== null || key.environment !== environment
      ? undefined
      : { key, limits: limitsFor(key.plan, key) }
    cache.set(tokenHash, { caller })
    return caller
  }

  async function check (header: string | undefined): Promise<Caller | ApiError> {
    if (header === undefined || header.trim() === '') return Errors.noKey()
    const bearer = BEARER.exec(header.trim())
    if (bearer === null) return Errors.notBearer()
    const token = bearer[1]?.trim() ?? ''
    if (token === '') return Errors.emptyBearer()
    if (!TOKEN.test(token)) return Errors.manyKeys()
    const shape = inspectToken(token)
    if (!shape.ok) return Errors.notAKey()
    if (shape.environment !== environment) return Errors.keyOfOtherEnvironment(shape.environment, environment)
    try {
      return (await findCaller(hashToken(token))) ?? Errors.unknownKey()
    } catch (error) {
      // Counted as anonymous, then answered 503: the key could not be checked.
      if (error instanceof StorageUnavailableError) return Errors.storageUnavailable()
      throw error
    }
  }

  return async (request) => {
    const result = await check(request.headers.authorization)
    if (result instanceof ApiError) request.authFailure = result
    else request.caller = result
  }
}
