// Response schemas with the headers each response carries, so that the
// OpenAPI document describes what the service really sends.
import { Type, type TSchema } from '@sinclair/typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.js'
import { ErrorBody } from './error.js'

const INT32_MAX = 2_147_483_647

/** A non-negative integer header; int32 or int64 as its maximum needs. */
const int = (description: string, maximum = INT32_MAX) =>
  Type.Integer({ minimum: 0, maximum, format: maximum > INT32_MAX ? 'int64' : 'int32', description })

/** A string header of known shape. */
const text = (description: string, maxLength: number, pattern?: string) =>
  Type.String(pattern === undefined ? { maxLength, description } : { maxLength, pattern, description })

// One window of the IETF draft's structured headers, as rate-limit.ts writes it.
const POLICY_ITEM = '"(minute|day|ban)";q=[0-9]+;w=[0-9]+'
const STATE_ITEM = '"(minute|day|ban)";r=[0-9]+;t=[0-9]+'
const LINK_VALUE = '^<[^<>\\s]+>; *rel="[^"]+"'

/** `petstore keys create --per-minute/--per-day` take up to ten digits. */
const MAX_LIMIT = 9_999_999_999

export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': int('Requests allowed in the window with the fewest requests left.', MAX_LIMIT),
  'X-RateLimit-Remaining': int('Requests left in that window.', MAX_LIMIT),
  'X-RateLimit-Reset': int('Unix time, in seconds, at which that window resets (while banned: at which the ban ends).', 253_402_300_799),
  // The draft's two headers are keyed as the service sends them, in lower
  // case (header names are case-insensitive, RFC 9110 §5.1): the OWASP
  // ruleset's rate-limit rule is a `oneOf` that refuses a response
  // documenting both `RateLimit` and `X-RateLimit-Limit`, though this one
  // carries both.
  'ratelimit-policy': text('Both windows, as the IETF draft `RateLimit-Policy` header: quota (q) and length in seconds (w) of the `"minute"` and (for a key) `"day"` window; while the key is banned, also `"ban"` with quota 0 and the length of the ban.', 200, `^${POLICY_ITEM}(, ${POLICY_ITEM})*$`),
  ratelimit: text('Both windows, as the IETF draft `RateLimit` header: requests left (r) and seconds until reset (t) of each window; while the key is banned, also `"ban";r=0` with the seconds until the ban ends.', 200, `^${STATE_ITEM}(, ${STATE_ITEM})*$`)
}

const RETRY_AFTER = { 'Retry-After': int('Seconds to wait before retrying.', 31_536_000) }

export const DEPRECATION_HEADERS = {
  Deprecation: text('When this operation was deprecated, as `@` and Unix seconds (RFC 9745).', 32, '^@[0-9]+$'),
  Sunset: text('When this operation stops working, as an HTTP date (RFC 8594).', 29,
    '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$'),
  Link: text('`rel="successor-version"`: the operation to use instead; `rel="deprecation"`: the documentation.', 1000, LINK_VALUE)
}

export const NEXT_LINK = {
  Link: text('Present when more animals follow: `<URL>; rel="next"`, the URL of the next page.', 2000, LINK_VALUE)
}

export const IDEMPOTENT_REPLAYED = {
  'Idempotent-Replayed': Type.String({ enum: ['true'], description: 'Present when this response repeats the first one sent for the same Idempotency-Key.' })
}

/** Headers on every response of the service, whatever the operation and status. */
const EVERY_RESPONSE = {
  'X-Request-Id': Type.String({ format: 'uuid', maxLength: 36, description: 'Identifies this request in the service\'s logs; quote it when reporting a problem.' }),
  'Access-Control-Allow-Origin': Type.String({
    maxLength: 2000,
    description: 'Sent only when the service is configured to allow browser origins (`CORS_ORIGINS`) and the request\'s `Origin` is one of them: that origin (`*` when every origin is allowed). Absent otherwise, and always when no origins are configured: then scripts on other sites cannot read the responses.'
  })
}

type Headers = Record<string, TSchema>

export function withHeaders<T extends TSchema> (schema: T, description: string, headers: Headers): T {
  return { ...schema, description, headers: { ...headers, ...EVERY_RESPONSE } }
}

/** Headers that some error statuses carry besides the rate-limit ones. */
const ERROR_HEADERS: Record<number, Headers> = {
  401: {
    'WWW-Authenticate': text('`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent and refused (RFC 6750).', 1000, '^Bearer realm="petstore"')
  },
  405: { Allow: text('The methods the path has.', 100, '^[A-Z]+(, [A-Z]+)*$') },
  409: RETRY_AFTER,
  429: RETRY_AFTER,
  503: RETRY_AFTER
}

function codesOf (status: number): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status)
}

/** A status's description, from the catalogue's words for each of its codes. */
function describe (status: number): string {
  const codes = codesOf(status)
  const [only] = codes
  if (codes.length === 1 && only !== undefined) {
    const { description } = ERROR_CODES[only]
    return `${description.charAt(0).toUpperCase()}${description.slice(1)} (\`${only}\`).`
  }
  return codes.map((code) => `\`${code}\`: ${ERROR_CODES[code].description}.`).join(' ')
}

/** The Error body as a given status has it: only that status's codes. */
function errorBodyFor (status: number): TSchema {
  const codes = codesOf(status)
  const { code, status: statusField } = ErrorBody.properties
  return {
    ...ErrorBody,
    properties: {
      ...ErrorBody.properties,
      code: codes.length === 0 ? code : { ...code, enum: codes },
      status: { ...statusField, minimum: status, maximum: status }
    }
  }
}

/** Error responses of an operation, each with the Error body and its headers. */
export function errorResponses (statuses: readonly number[], common: Headers): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {}
  for (const status of statuses) {
    responses[status] = withHeaders(errorBodyFor(status), describe(status), { ...common, ...ERROR_HEADERS[status] })
  }
  return responses
}
