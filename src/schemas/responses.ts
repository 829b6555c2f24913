// Response schemas with the headers each response carries, so that the
// OpenAPI document describes what the service really sends.
import { Type, type TSchema } from './typebox.js'
import { ERROR_CODES, NAMED_ONLY, codesFor, statusesOf, type Audience, type ErrorCode } from '../errors.js'
import { AdminErrorBody, ErrorBody } from './error.js'
import { POLICY_ITEM_PATTERN as POLICY_ITEM, STATE_ITEM_PATTERN as STATE_ITEM } from './rate-limit.js'

const INT32_MAX = 2_147_483_647

/** A non-negative integer header; int32 or int64 as its maximum needs. */
const int = (description: string, maximum = INT32_MAX) =>
  Type.Integer({ minimum: 0, maximum, format: maximum > INT32_MAX ? 'int64' : 'int32', description })

/** A string header of known shape. */
const text = (description: string, maxLength: number, pattern?: string) =>
  Type.String(pattern === undefined ? { maxLength, description } : { maxLength, pattern, description })

const LINK_VALUE = '^<[^<>\\s]+>; *rel="[^"]+"'

/** `petstore keys create --per-minute/--per-day` take up to ten digits. */
const MAX_LIMIT = 9_999_999_999

/** A response header: the name it is sent under, and its schema, whose description the document gives it. */
export interface Header {
  name: string
  schema: TSchema
}

/**
 * A request's id (docs/OPERATING.md: Logs): the client's `X-Request-Id` when it is
 * 1 to 128 visible ASCII characters, otherwise a UUID the service makes.
 */
const REQUEST_ID = (description: string) =>
  Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7E]{1,128}$', description })

/**
 * Every header a response may carry, each documented once under
 * `components.headers` by its key here. The two `Link` headers differ in
 * what they link to, so each has a key of its own.
 */
export const HEADERS = {
  'X-RateLimit-Limit': { name: 'X-RateLimit-Limit', schema: int('Requests allowed in the window with the fewest requests left; 0 on a 503 `overloaded`, which is counted against no window.', MAX_LIMIT) },
  'X-RateLimit-Remaining': { name: 'X-RateLimit-Remaining', schema: int('Requests left in that window.', MAX_LIMIT) },
  'X-RateLimit-Reset': { name: 'X-RateLimit-Reset', schema: int('Unix time, in seconds, at which that window resets (while banned: at which the ban ends; on a 503 `overloaded`: once its Retry-After has passed).', 253_402_300_799) },
  // The draft's two headers are keyed as the service sends them, in lower
  // case (header names are case-insensitive, RFC 9110 §5.1): the OWASP
  // ruleset's rate-limit rule is a `oneOf` that refuses a response
  // documenting both `RateLimit` and `X-RateLimit-Limit`, though this one
  // carries both.
  'RateLimit-Policy': {
    name: 'ratelimit-policy',
    schema: text('Both windows, as the IETF draft `RateLimit-Policy` header: quota (q) and length in seconds (w) of the `"minute"` and (for a key) `"day"` window; while the key is banned, also `"ban"` with quota 0 and the length of the ban; a 429 `concurrency_limited` adds `"concurrency"`, the key\'s cap of requests in flight, in the quota unit `"concurrent-requests"`. A 503 `overloaded` has `"overload"` alone, with quota 0 and its Retry-After as length.', 200, `^${POLICY_ITEM}(, ${POLICY_ITEM})*$`)
  },
  RateLimit: {
    name: 'ratelimit',
    schema: text('Both windows, as the IETF draft `RateLimit` header: requests left (r) and seconds until reset (t) of each window; while the key is banned, also `"ban";r=0` with the seconds until the ban ends; a 429 `concurrency_limited` adds `"concurrency";r=0`. A 503 `overloaded` has `"overload";r=0` alone, with its Retry-After.', 200, `^${STATE_ITEM}(, ${STATE_ITEM})*$`)
  },
  // The admin API's one window (plugins/admin-auth.ts), on every answer it gives.
  'X-RateLimit-Limit-Admin': { name: 'X-RateLimit-Limit', schema: int('Requests with the admin token this address may send in a minute.', MAX_LIMIT) },
  'X-RateLimit-Remaining-Admin': { name: 'X-RateLimit-Remaining', schema: int('Requests with the admin token this address has left in the current minute.', MAX_LIMIT) },
  'X-RateLimit-Reset-Admin': { name: 'X-RateLimit-Reset', schema: int('Unix time, in seconds, at which the current minute ends.', 253_402_300_799) },
  'Retry-After': { name: 'Retry-After', schema: int('Seconds to wait before retrying.', 31_536_000) },
  Deprecation: { name: 'Deprecation', schema: text('When this operation was deprecated, as `@` and Unix seconds (RFC 9745).', 32, '^@[0-9]+$') },
  Sunset: {
    name: 'Sunset',
    schema: text('When this operation stops working, as an HTTP date (RFC 8594).', 29,
      '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$')
  },
  'Link-Deprecation': { name: 'Link', schema: text('`rel="successor-version"`: the operation to use instead; `rel="deprecation"`: the documentation.', 1000, LINK_VALUE) },
  'Link-Next': { name: 'Link', schema: text('Present when more animals follow: `<URL>; rel="next"`, the URL of the next page.', 2000, LINK_VALUE) },
  'Idempotent-Replayed': {
    name: 'Idempotent-Replayed',
    schema: Type.String({ enum: ['true'], description: 'Present when this response repeats the first one sent for the same Idempotency-Key.' })
  },
  'WWW-Authenticate': {
    name: 'WWW-Authenticate',
    schema: text('`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent and refused, or `error="insufficient_scope"` and the `scope` the operation needs when the key lacks it (RFC 6750).', 1000, '^Bearer realm="petstore"')
  },
  'WWW-Authenticate-Admin': {
    name: 'WWW-Authenticate',
    schema: text('`Bearer realm="petstore-admin"`, with `error="invalid_token"` when a token was sent and is not the admin token (RFC 6750).', 200, '^Bearer realm="petstore-admin"')
  },
  Allow: { name: 'Allow', schema: text('The methods the path has.', 100, '^[A-Z]+(, [A-Z]+)*$') },
  'X-Content-Type-Options': {
    name: 'X-Content-Type-Options',
    schema: Type.String({ enum: ['nosniff'], description: 'Always `nosniff`: a browser takes the body as the `Content-Type` says, never as what its bytes look like.' })
  },
  'Cache-Control': {
    name: 'Cache-Control',
    schema: Type.String({ enum: ['no-store'], description: 'Always `no-store`: each answer is for its own API key and carries its rate-limit state, so no cache, shared or private, may keep it.' })
  },
  'X-Request-Id': { name: 'X-Request-Id', schema: REQUEST_ID('Identifies this request in the service\'s logs: the `X-Request-Id` the request carried when it was 1 to 128 visible ASCII characters, otherwise a UUID the service made. Quote it when reporting a problem.') },
  'Access-Control-Allow-Origin': {
    name: 'Access-Control-Allow-Origin',
    schema: Type.String({
      maxLength: 2000,
      description: 'Sent only when the service is configured to allow browser origins (`CORS_ORIGINS`) and the request\'s `Origin` is one of them: that origin (`*` when every origin is allowed). Absent otherwise, and always when no origins are configured: then scripts on other sites cannot read the responses.'
    })
  }
} as const satisfies Record<string, Header>

/** The optional `X-Request-Id` request header every operation takes, documented once under `components.parameters`. */
export const REQUEST_ID_PARAMETER: Header = {
  name: 'X-Request-Id',
  schema: REQUEST_ID('Identifies the request in the service\'s logs and is echoed in the response\'s `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes.')
}

type Headers = Record<string, TSchema>

/** Headers keyed by the name they are sent under. */
const sent = (...headers: Header[]): Headers => Object.fromEntries(headers.map(({ name, schema }) => [name, schema]))

export const RATE_LIMIT_HEADERS = sent(
  HEADERS['X-RateLimit-Limit'], HEADERS['X-RateLimit-Remaining'], HEADERS['X-RateLimit-Reset'], HEADERS['RateLimit-Policy'], HEADERS.RateLimit
)

const ADMIN_RATE_LIMIT_HEADERS = sent(HEADERS['X-RateLimit-Limit-Admin'], HEADERS['X-RateLimit-Remaining-Admin'], HEADERS['X-RateLimit-Reset-Admin'])

const RETRY_AFTER = sent(HEADERS['Retry-After'])

export const DEPRECATION_HEADERS = sent(HEADERS.Deprecation, HEADERS.Sunset, HEADERS['Link-Deprecation'])

export const NEXT_LINK = sent(HEADERS['Link-Next'])

export const IDEMPOTENT_REPLAYED = sent(HEADERS['Idempotent-Replayed'])

/** Headers on every response of the service, whatever the operation and status. */
const EVERY_RESPONSE = sent(
  HEADERS['X-Request-Id'], HEADERS['X-Content-Type-Options'], HEADERS['Cache-Control'], HEADERS['Access-Control-Allow-Origin']
)

export function withHeaders<T extends TSchema> (schema: T, description: string, headers: Headers): T {
  return { ...schema, description, headers: { ...headers, ...EVERY_RESPONSE } }
}

/** Headers that some error statuses carry besides the rate-limit ones. */
const ERROR_HEADERS: Record<number, Headers> = {
  403: sent(HEADERS['WWW-Authenticate']),
  405: sent(HEADERS.Allow),
  409: RETRY_AFTER,
  // During a brownout: when it ends (docs/API.md: The deprecated operation).
  410: RETRY_AFTER,
  429: RETRY_AFTER,
  503: RETRY_AFTER
}

/** The 401s that challenge the caller to send a bearer token (RFC 6750 §3); a refused signature challenges no one. */
const BEARER_CHALLENGES: ReadonlySet<ErrorCode> = new Set(['missing_api_key', 'invalid_api_key'])

/** A status's own headers, as its codes send them. */
function errorHeaders (status: number, codes: readonly ErrorCode[], audience: Audience): Headers {
  if (status !== 401) return ERROR_HEADERS[status] ?? {}
  if (audience === 'admin') return sent(HEADERS['WWW-Authenticate-Admin'])
  return codes.some((code) => BEARER_CHALLENGES.has(code)) ? sent(HEADERS['WWW-Authenticate']) : {}
}

/** The codes of a status that an operation documenting the status alone may answer: those some operation names for itself (errorAnswers) are left out. */
function codesOf (status: number, audience: Audience): ErrorCode[] {
  return codesFor(audience).filter((code) => ERROR_CODES[code].status === status && !NAMED_ONLY.has(code))
}

/** A status's description, from the catalogue's words for each of its codes. */
function describe (codes: readonly ErrorCode[]): string {
  const [only] = codes
  if (codes.length === 1 && only !== undefined) {
    const { description } = ERROR_CODES[only]
    return `${description.charAt(0).toUpperCase()}${description.slice(1)} (\`${only}\`).`
  }
  return codes.map((code) => `\`${code}\`: ${ERROR_CODES[code].description}.`).join(' ')
}

/**
 * The Error body as a given status has it: the Error component, narrowed to
 * that status's codes and number.
 */
function errorBodyFor (status: number, codes: readonly ErrorCode[], audience: Audience): TSchema {
  const narrowed = {
    ...(codes.length === 0 ? {} : { code: { type: 'string', enum: codes } }),
    status: { type: 'integer', format: 'int32', minimum: status, maximum: status }
  }
  return Type.Unsafe({ allOf: [audience === 'api' ? ErrorBody : AdminErrorBody, { properties: narrowed }] })
}

/** One error response: the Error body narrowed to these codes, its description and headers. */
function errorResponse (status: number, codes: readonly ErrorCode[], common: Headers, audience: Audience): TSchema {
  return withHeaders(errorBodyFor(status, codes, audience), describe(codes), { ...common, ...errorHeaders(status, codes, audience) })
}

/** An admin operation's answers: its success and its refusals, each with the admin API's rate-limit headers (plugins/admin-auth.ts). */
export function adminAnswers<S extends 200 | 201 | 202, T extends TSchema> (
  status: S, schema: T, description: string, refusals: readonly number[], headers: Headers = {}
): Record<S, T> & Record<number, TSchema> {
  const success = { [status]: withHeaders(schema, description, { ...ADMIN_RATE_LIMIT_HEADERS, ...headers }) } as Record<S, T>
  return { ...errorResponses(refusals, ADMIN_RATE_LIMIT_HEADERS, 'admin'), ...success }
}

/** Error responses of an operation, one per status, each with every code of the status that any operation may answer. */
export function errorResponses (statuses: readonly number[], common: Headers, audience: Audience = 'api'): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {}
  for (const status of statuses) responses[status] = errorResponse(status, codesOf(status, audience), common, audience)
  return responses
}

/**
 * Error responses of an operation that answers exactly these codes, and no
 * other of their statuses': for the operations outside the gate
 * (routes/leaks.ts), whose 401, 429 and 503 are not a key's.
 */
export function errorAnswers (codes: readonly ErrorCode[], common: Headers): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {}
  for (const status of statusesOf(codes)) {
    responses[status] = errorResponse(status, codes.filter((code) => ERROR_CODES[code].status === status), common, 'api')
  }
  return responses
}
