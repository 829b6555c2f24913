// The catalogue of errors, in one place, as fastify core's lib/errors.js
// keeps its own: every code of the Error body with its HTTP status and what
// it means (the words the OpenAPI document uses), then every error the
// service answers, by name, with its message. Code elsewhere throws
// `Errors.name(…)`; the error handler turns it into the Error body.

/** The codes (docs/API.md: Errors): each has one HTTP status, here and nowhere else. */
export const ERROR_CODES = {
  invalid_request: { status: 400, description: 'a parameter, a header, the body or the cursor is not valid; `details` names each problem' },
  invalid_json: { status: 400, description: 'the body is not JSON' },
  missing_api_key: { status: 401, description: 'no API key was sent' },
  invalid_api_key: { status: 401, description: 'the API key is unknown, revoked, expired, mistyped or of the other environment' },
  invalid_admin_token: { status: 401, description: 'the admin token is missing or wrong' },
  invalid_signature: { status: 401, description: 'a secret-scanning report whose signature is missing or does not verify with a key of the scanner' },
  insufficient_scope: { status: 403, description: 'the API key is valid, but its scopes do not cover this operation' },
  not_found: { status: 404, description: 'no such animal, or no such route' },
  method_not_allowed: { status: 405, description: 'the path exists, the method does not' },
  request_timeout: { status: 408, description: 'the request did not arrive in time' },
  idempotency_key_in_use: { status: 409, description: 'a request with the same Idempotency-Key is still in progress' },
  key_revoked: { status: 409, description: 'the key is revoked: it can be read, never changed or rolled' },
  delivery_pending: { status: 409, description: 'the webhook delivery is still to be tried: only a succeeded or failed one can be sent again' },
  gone: { status: 410, description: 'this operation has been removed' },
  payload_too_large: { status: 413, description: 'the body is larger than 16 KiB (1 MiB for a secret-scanning report)' },
  expectation_failed: { status: 417, description: 'the `Expect` header asks for something other than `100-continue`, the only expectation the service meets' },
  unsupported_media_type: { status: 415, description: 'the body is not declared as UTF-8 `application/json`' },
  idempotency_key_reused: { status: 422, description: 'the Idempotency-Key was used before with a different body' },
  rate_limited: { status: 429, description: 'too many requests: wait for Retry-After, then back off exponentially' },
  api_key_banned: { status: 429, description: 'the key kept sending after being rate limited and is banned for a while; wait for Retry-After' },
  concurrency_limited: { status: 429, description: 'the key has as many requests in flight as its cap allows; retry after Retry-After, or send fewer at once' },
  request_header_fields_too_large: { status: 431, description: 'the request headers are too large' },
  internal_error: { status: 500, description: 'something went wrong on the service side' },
  service_unavailable: { status: 503, description: 'the database, or for a secret-scanning report the list of keys that verify it, cannot be reached; retry after Retry-After' },
  overloaded: { status: 503, description: 'the service is overloaded and refuses requests for a while; retry after Retry-After, backing off exponentially' }
} as const satisfies Record<string, { status: number, description: string }>

export type ErrorCode = keyof typeof ERROR_CODES

/** The statuses of these codes, once each, in ascending order: what an operation documents for them. */
export function statusesOf (codes: readonly ErrorCode[]): number[] {
  return [...new Set(codes.map((code) => ERROR_CODES[code].status))].sort((a, b) => a - b)
}

/** Who may be answered a code: the admin API's own codes are never answered on /v1, and its OpenAPI document alone lists them. */
export type Audience = 'api' | 'admin'
const ADMIN_ONLY: ReadonlySet<ErrorCode> = new Set(['invalid_admin_token', 'key_revoked', 'delivery_pending'])
/** The admin API is never shed (docs/OPERATING.md: Overload), and takes no secret-scanning reports. */
const API_ONLY: ReadonlySet<ErrorCode> = new Set(['overloaded', 'invalid_signature'])

/**
 * Codes that only the operations naming them answer (schemas/responses.ts
 * errorAnswers): no operation behind the gate checks a signature, so their
 * 401s leave it out.
 */
export const NAMED_ONLY: ReadonlySet<ErrorCode> = new Set(['invalid_signature'])

/** The codes one audience may be answered. */
export function codesFor (audience: Audience): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !(audience === 'admin' ? API_ONLY : ADMIN_ONLY).has(code))
}

export interface ErrorDetail {
  field: string
  reason: string
}

export class ApiError extends Error {
  declare readonly code: ErrorCode
  declare readonly status: number
  declare readonly details: ErrorDetail[] | undefined
  declare readonly headers: Record<string, string>

  constructor (code: ErrorCode, message: string, options: { details?: ErrorDetail[], headers?: Record<string, string> } = {}) {
    const status = ERROR_CODES[code].status
    const fields = { code, status, details: options.details, headers: options.headers ?? {} }
    if (status < 500) {
      // A 4xx is an answer, not a fault: no one reads where it was made, and
      // capturing the stack took a few per cent of each refusal. V8 captures
      // it in Error's constructor, so a 4xx is made without calling it: an
      // object on this class's prototype (still an ApiError and an Error),
      // with Error's own `message` and no `stack`. A 5xx keeps its stack
      // for the log. Kept for the 401 and 429 rows of `npm run bench`: a 429
      // made fifteen calls deep, 5.9 → 0.7 µs (docs/PERFORMANCE.md: What each change bought).
      const answer: ApiError = Object.create(new.target.prototype)
      Object.defineProperty(answer, 'message', { value: message, writable: true, configurable: true })
      return Object.assign(answer, fields)
    }
    super(message)
    Object.assign(this, fields)
  }
}
// On the prototype, not a field: a 4xx never runs the field initialisers.
ApiError.prototype.name = 'ApiError'

const REALM = 'Bearer realm="petstore"'

/** 401 without a key: the challenge names the realm only (RFC 6750 §3). */
const missingKey = (message: string): ApiError =>
  new ApiError('missing_api_key', message, { headers: { 'www-authenticate': REALM } })

/** 401 for a key that was sent and refused: `error="invalid_token"` (RFC 6750 §3.1). */
const refusedKey = (message: string): ApiError => new ApiError('invalid_api_key', message, {
  headers: { 'www-authenticate': `${REALM}, error="invalid_token", error_description="${message.replace(/"/g, "'")}"` }
})

/** Every error the service answers, by name. */
export const Errors = {
  // 400
  invalidUrl: () => new ApiError('invalid_request', 'The URL is not valid: check its percent-encoding and length.'),
  invalidRequest: (summary: string, details: ErrorDetail[]) =>
    new ApiError('invalid_request', `The request is not valid: ${clip(summary, 1000)}.`, { details }),
  invalidRequestUnspecified: () => new ApiError('invalid_request', 'The request is not valid.'),
  contentLengthMismatch: () => new ApiError('invalid_request', 'Content-Length does not match the body.'),
  foreignCursor: () => new ApiError('invalid_request', 'The cursor was not made by this service; copy it from a Link: rel="next" URL.', {
    details: [{ field: 'query.cursor', reason: 'is not a cursor this service made' }]
  }),
  cursorOfAnotherFilter: () => new ApiError('invalid_request', 'The cursor belongs to a listing with another status filter.', {
    details: [{ field: 'query.cursor', reason: 'was made for another status filter' }]
  }),
  invalidIdempotencyKey: () => new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 printable ASCII characters.', {
    details: [{ field: 'header.idempotency-key', reason: 'must be 1 to 255 printable ASCII characters' }]
  }),
  repeatedIdempotencyKey: () => new ApiError('invalid_request', 'Idempotency-Key must be sent once; this request has it more than once.', {
    details: [{ field: 'header.idempotency-key', reason: 'must be sent once' }]
  }),
  invalidJson: (reason: string) => new ApiError('invalid_json', `The body is not valid JSON: ${reason}`),
  invalidHttp: () => new ApiError('invalid_request', 'The request is not valid HTTP/1.1.'),
  // As Node does when it refuses one: a client this confused gets a fresh connection.
  missingHost: () => new ApiError('invalid_request', 'An HTTP/1.1 request must carry a Host header.', {
    details: [{ field: 'header.host', reason: 'is required in HTTP/1.1' }],
    headers: { connection: 'close' }
  }),
  upgradeWithChunkedBody: () => new ApiError('invalid_request', 'A request that asks to upgrade the connection must send its body with Content-Length, not chunked.', {
    details: [{ field: 'header.transfer-encoding', reason: 'must not be chunked with Connection: upgrade' }],
    headers: { connection: 'close' }
  }),
  notAProxy: () => new ApiError('invalid_request', 'CONNECT is not supported: this service is not a proxy.'),

  // 401
  noKey: () => missingKey('Send your API key as Authorization: Bearer <API_KEY>.'),
  notBearer: () => missingKey('The Authorization header must use the Bearer scheme: Authorization: Bearer <API_KEY>.'),
  emptyBearer: () => missingKey('The Authorization header has no API key after "Bearer ".'),
  manyKeys: () => refusedKey('The Authorization header must hold one API key after "Bearer ".'),
  manyAuthorizations: () => refusedKey('Send one Authorization header; this request has more than one.'),
  notAKey: () => refusedKey('The API key is not a petstore key; check that it was copied whole.'),
  keyOfOtherEnvironment: (key: string, service: string) => refusedKey(`This is a ${key} API key; this is the ${service} service.`),
  unknownKey: () => refusedKey('The API key is unknown or has been revoked.'),
  expiredKey: (at: Date) => refusedKey(`The API key expired at ${at.toISOString()}; ask for a new one.`),
  /** One message whatever failed (no signature, an unknown key, a body changed after signing): a forger learns nothing from it. */
  badSignature: () => new ApiError('invalid_signature', 'The report must be signed with a current key of the secret scanner: send Github-Public-Key-Identifier and Github-Public-Key-Signature over the body as sent.'),

  adminTokenRequired: () => new ApiError('invalid_admin_token', 'Send the admin token as Authorization: Bearer <ADMIN_TOKEN>.', {
    headers: { 'www-authenticate': 'Bearer realm="petstore-admin"' }
  }),
  manyAdminAuthorizations: () => new ApiError('invalid_admin_token', 'Send one Authorization header; this request has more than one.', {
    headers: { 'www-authenticate': 'Bearer realm="petstore-admin", error="invalid_token"' }
  }),
  wrongAdminToken: () => new ApiError('invalid_admin_token', 'The admin token is wrong.', {
    headers: { 'www-authenticate': 'Bearer realm="petstore-admin", error="invalid_token"' }
  }),

  // 403: the key is fine, but not for this (RFC 6750 §3.1).
  insufficientScope: (scope: string) => new ApiError('insufficient_scope', `This API key does not have the scope ${scope}, which this operation needs.`, {
    headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"` }
  }),

  // 404, 405, 408, 409, 410
  /** `url` as requested; its query is left out of the message. */
  notFound: (method: string, url: string) => new ApiError('not_found', `Nothing is at ${method} ${clip(url.split('?')[0] ?? '', 200)}.`),
  noSuchPet: (id: bigint) => new ApiError('not_found', `No animal has the id ${id}.`),
  methodNotAllowed: (method: string, allow: string) =>
    new ApiError('method_not_allowed', `${method} is not allowed here; use ${allow}.`, { headers: { allow } }),
  requestTimeout: () => new ApiError('request_timeout', 'The request took too long to arrive.'),
  idempotencyKeyInUse: () => new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress; retry after it completes.', {
    headers: { 'retry-after': '1' }
  }),
  // The words of keys/manage.ts's errors, which the `petstore keys` commands print too.
  noSuchKey: (message: string) => new ApiError('not_found', message),
  keyRevoked: (message: string) => new ApiError('key_revoked', message),
  noSuchWebhook: (message: string) => new ApiError('not_found', message),
  noSuchDelivery: (message: string) => new ApiError('not_found', message),
  deliveryPending: (message: string) => new ApiError('delivery_pending', message),
  gone: (sunset: Date, successor: string) =>
    new ApiError('gone', `This operation was removed on ${sunset.toUTCString()}; use GET ${successor} instead.`),
  /** As after the sunset, for the brownout's length: Retry-After says when it ends, and the operation answers again. */
  brownout: (brownout: { text: string, end: number }, sunset: Date, successor: string, retryAfterSeconds: number) =>
    new ApiError('gone', `This operation is unavailable during a scheduled brownout (${brownout.text}), until ${new Date(brownout.end).toISOString()}, ` +
      `and will be removed on ${sunset.toUTCString()}; use GET ${successor} instead.`, { headers: { 'retry-after': String(retryAfterSeconds) } }),

  // 413, 415, 417, 422, 429, 431
  payloadTooLarge: () => new ApiError('payload_too_large', 'The body is larger than 16 KiB.'),
  reportTooLarge: () => new ApiError('payload_too_large', 'A secret-scanning report may be at most 1 MiB; send its matches in smaller reports.'),
  expectationFailed: () => new ApiError('expectation_failed', 'The only expectation this service meets is Expect: 100-continue.'),
  notJson: () => new ApiError('unsupported_media_type', 'Send the body as Content-Type: application/json.'),
  notUtf8: (charset: string) => new ApiError('unsupported_media_type', `The body must be UTF-8 JSON, not ${charset}.`),
  encodedBody: (encoding: string) => new ApiError('unsupported_media_type', `The body must be sent uncompressed, not with Content-Encoding: ${clip(encoding, 50)}.`),
  idempotencyKeyReused: () => new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different body; use a new key for a new animal.'),
  adminAttemptsSpent: (retryAfterSeconds: number) => new ApiError('rate_limited', 'Too many requests with a wrong admin token from this address: wait for the number of seconds in Retry-After.', {
    headers: { 'retry-after': String(retryAfterSeconds) }
  }),
  rateLimited: (retryAfterSeconds: number) => new ApiError('rate_limited', 'Too many requests: wait for the number of seconds in Retry-After, then back off exponentially.', {
    headers: { 'retry-after': String(retryAfterSeconds) }
  }),
  banned: (retryAfterSeconds: number) => new ApiError('api_key_banned', 'This API key kept sending after being rate limited and is banned for a while; wait for the number of seconds in Retry-After.', {
    headers: { 'retry-after': String(retryAfterSeconds) }
  }),
  concurrencyLimited: (cap: number) => new ApiError('concurrency_limited', `This API key already has ${cap} requests in flight, as many as it may have at once: wait for one to finish, or for the number of seconds in Retry-After.`, {
    headers: { 'retry-after': '1' }
  }),
  headersTooLarge: () => new ApiError('request_header_fields_too_large', 'The request headers are too large.'),

  // 5xx: never with internals in the body.
  internal: () => new ApiError('internal_error', 'Something went wrong on our side; the error was logged.'),
  storageUnavailable: () => new ApiError('service_unavailable', 'The service cannot reach its database; retry shortly.', {
    headers: { 'retry-after': '5' }
  }),
  scannerKeysUnavailable: (retryAfterSeconds: number) => new ApiError('service_unavailable', 'The keys that verify secret-scanning reports could not be read yet; send the report again after the number of seconds in Retry-After.', {
    headers: { 'retry-after': String(retryAfterSeconds) }
  }),
  overloaded: (retryAfterSeconds: number) => new ApiError('overloaded', 'The service is overloaded: wait for the number of seconds in Retry-After, then back off exponentially.', {
    headers: { 'retry-after': String(retryAfterSeconds) }
  })
} as const

/** Thrown by a storage backend that cannot answer (down, or too slow). */
export class StorageUnavailableError extends Error {
  override name = 'StorageUnavailableError'
}

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
  details?: ErrorDetail[]
}

export function errorBody (error: ApiError): ErrorBody {
  const body: ErrorBody = { code: error.code, message: error.message, status: error.status }
  if (error.details !== undefined && error.details.length > 0) body.details = error.details
  return body
}

/** Cuts client input quoted back in an error, so that the error stays small. */
export function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}
