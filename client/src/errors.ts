import type { components } from './generated/openapi.js'

/** One problem found in a request: where (`body.name`, `query.limit`, …) and what. */
export type ErrorDetail = NonNullable<components['schemas']['Error']['details']>[number]

interface PetstoreErrorInit {
  code: string
  message: string
  status: number
  details?: ErrorDetail[] | undefined
  response?: Response | undefined
}

/**
 * An error the service answered (its Error body: `code`, `message`,
 * `status`, `details`), or one the client raised in its place.
 */
export class PetstoreError extends Error {
  override name = 'PetstoreError'
  /** The service's error code (`invalid_request`, `not_found`, …), or `unexpected_response` for a body that is not the service's Error. */
  readonly code: string
  /** The HTTP status. */
  readonly status: number
  /** One entry per problem, for `invalid_request`. */
  readonly details: ErrorDetail[] | undefined
  /** The HTTP response, its body read; absent when the client answered without sending a request. */
  readonly response: Response | undefined

  constructor ({ code, message, status, details, response }: PetstoreErrorInit) {
    super(message)
    this.code = code
    this.status = status
    this.details = details
    this.response = response
  }
}

/**
 * A 429 `rate_limited` that retrying could not get past: every retry was
 * used, or waiting for `Retry-After` would pass the call's time budget. Or,
 * with `pace: true`, the client's own refusal to send a request that the
 * limit would refuse (then `response` is absent).
 */
export class RateLimitedError extends PetstoreError {
  override name = 'RateLimitedError'
  /** When a request may be sent again: `Retry-After` from the response's arrival. */
  readonly retryAt: Date

  constructor (init: PetstoreErrorInit & { retryAt: Date }) {
    super(init)
    this.retryAt = init.retryAt
  }
}

/**
 * A 429 `api_key_banned`: the key kept sending after being rate limited and
 * is banned until `until`. The client sends nothing more with this key
 * until then: each call fails at once with this error, without `response`.
 */
export class ApiKeyBannedError extends PetstoreError {
  override name = 'ApiKeyBannedError'
  /** When the ban ends. */
  readonly until: Date

  constructor (init: PetstoreErrorInit & { until: Date }) {
    super(init)
    this.until = init.until
  }
}

/**
 * A 403 `insufficient_scope`: the key is valid but may not do this (a
 * read-only key asked to add an animal). Retrying cannot help; a key with
 * `scope` can.
 */
export class InsufficientScopeError extends PetstoreError {
  override name = 'InsufficientScopeError'
  /** The scope the operation needs (`pets:write`), from `WWW-Authenticate`; undefined when the response did not name it. */
  readonly scope: string | undefined

  constructor (init: PetstoreErrorInit & { scope: string | undefined }) {
    super(init)
    this.scope = init.scope
  }
}
