// Who is calling: the bearer token, checked on its shape, then looked up.
// Plain functions of a header value, with no web framework in them: the
// gate (plugins/gate.ts) calls identify, then counts the request, and only
// then answers 401 when there is no caller.
// https://www.rfc-editor.org/rfc/rfc6750#section-3
import { Errors, StorageUnavailableError, type ApiError } from '../errors.js'
import type { Environment } from '../domain.js'
import type { ApiKeyRecord } from '../db/storage.js'
import { hashToken, inspectToken } from '../keys/tokens.js'
import type { Limits } from '../limits/plans.js'

/** A request's valid API key, and the limits it is counted against. */
export interface Caller {
  key: ApiKeyRecord
  limits: Limits
}

/** The caller whose token has this SHA-256, when it is a usable key of this environment. */
export type Lookup = (tokenHash: string) => Promise<Caller | undefined>

/** The caller an Authorization header names, or the error that says why there is none. */
export type Identify = (authorization: string | undefined) => Promise<Caller | ApiError>

// The token must start with a non-space: with `(?: +(.*))?` a run of spaces
// could be split between the two in as many ways as it is long, and a
// header that then fails to match took quadratic time.
const BEARER = /^Bearer(?: +([^ ].*)?)?$/i
const TOKEN = /^[^ ]+$/

export function createIdentify ({ environment, lookup }: { environment: Environment, lookup: Lookup }): Identify {
  return async (header) => {
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
      return (await lookup(hashToken(token))) ?? Errors.unknownKey()
    } catch (error) {
      // Counted as anonymous, then answered 503: the key could not be checked.
      if (error instanceof StorageUnavailableError) return Errors.storageUnavailable()
      throw error
    }
  }
}
