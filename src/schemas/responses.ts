// Response schemas with the headers each response carries, so that the
// OpenAPI document describes what the service really sends.
import { Type, type TSchema } from '@sinclair/typebox'
import { ErrorBody } from './error.js'

const int = (description: string, maximum = 2_147_483_647) => Type.Integer({ minimum: 0, maximum, description })
const text = (description: string, maxLength = 1000) => Type.String({ maxLength, description })

export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': int('Requests allowed in the window with the fewest requests left.'),
  'X-RateLimit-Remaining': int('Requests left in that window.'),
  'X-RateLimit-Reset': int('Unix time, in seconds, at which that window resets (while banned: at which the ban ends).', 253_402_300_799),
  'RateLimit-Policy': text('Both windows, as the IETF draft `RateLimit-Policy` header: quota (q) and length in seconds (w).'),
  RateLimit: text('Both windows, as the IETF draft `RateLimit` header: requests left (r) and seconds until reset (t).')
}

const RETRY_AFTER = { 'Retry-After': int('Seconds to wait before retrying.', 31_536_000) }

export const DEPRECATION_HEADERS = {
  Deprecation: text('When this operation was deprecated, as `@` and Unix seconds (RFC 9745).', 32),
  Sunset: text('When this operation stops working (RFC 8594).', 64),
  Link: text('`rel="successor-version"`: the operation to use instead; `rel="deprecation"`: the documentation.')
}

export const NEXT_LINK = {
  Link: text('Present when more animals follow: `<URL>; rel="next"`, the URL of the next page.', 2000)
}

export const IDEMPOTENT_REPLAYED = {
  'Idempotent-Replayed': Type.String({ enum: ['true'], description: 'Present when this response repeats the first one sent for the same Idempotency-Key.' })
}

type Headers = Record<string, TSchema>

export function withHeaders<T extends TSchema> (schema: T, description: string, headers: Headers): T {
  return { ...schema, description, headers }
}

const ERROR_DESCRIPTIONS: Record<number, [string, Headers?]> = {
  400: ['The request is not valid: a parameter, the body or the cursor. `details` names each problem.'],
  401: ['The API key is missing or invalid.', { 'WWW-Authenticate': text('`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent and refused (RFC 6750).') }],
  404: ['Not found.'],
  405: ['The path exists, the method does not.', { Allow: text('The methods the path has.', 100) }],
  409: ['A request with the same Idempotency-Key is still in progress.', RETRY_AFTER],
  410: ['This operation has been removed.'],
  413: ['The body is larger than 16 KiB.'],
  415: ['The body is not declared as `application/json`.'],
  422: ['The Idempotency-Key was used before with a different body.'],
  429: ['Too many requests (`rate_limited`), or the key is banned for a while (`api_key_banned`). Wait for Retry-After, then back off exponentially.', RETRY_AFTER],
  500: ['Something went wrong on the service side.'],
  503: ['The database cannot be reached; retry after Retry-After.', RETRY_AFTER]
}

/** Error responses of an operation, each with the Error body and its headers. */
export function errorResponses (statuses: readonly number[], common: Headers): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {}
  for (const status of statuses) {
    const [description, extra] = ERROR_DESCRIPTIONS[status] ?? ['Error.']
    responses[status] = withHeaders(ErrorBody, description, { ...common, ...extra })
  }
  return responses
}
