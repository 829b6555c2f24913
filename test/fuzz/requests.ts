// Generated requests for the fuzz tests: valid ones drawn from the same
// TypeBox schemas that validate requests (src/schemas), and invalid ones
// made from them by mutation (wrong types, unknown fields, numbers past
// int64, control characters, bodies past 16 KiB, nesting thousands deep,
// malformed UTF-8 …), for every operation, parameter, header and body, and
// for paths and methods that reach no operation. Secret-scanning reports are
// signed as the run's scanner signs, or not, so that their bodies reach the
// parser; the tokens they and revocations name are the run's, or odd ones.
//
// A request is generated as a plain description (`RequestSpec`), which
// fast-check prints and shrinks; `materialize` turns it into what is sent,
// with the tokens, ids and cursors the run has at that moment.
import { METHODS } from 'node:http'
import fc from 'fast-check'
import type { JsonSchema as TSchema } from '../../src/schemas/kinds.js'
import { CreatePetHeaders, ListPetsQuery, NewPet, PetIdParams } from '../../src/schemas/pet.js'
import { INT64_MAX } from '../support/fixtures.js'

/** A JSON number, or any other JSON text, written into a body exactly as given. */
export class RawJson {
  constructor (readonly text: string) {}
  toString (): string { return this.text }
}

export type Value = null | boolean | number | bigint | string | RawJson | Value[] | { [key: string]: Value }

/** Who the request says it is: a token the run issued, or an Authorization header as written. */
type Auth =
  | { kind: 'key' }
  | { kind: 'tight-key' }
  | { kind: 'revoked-key' }
  | { kind: 'none' }
  | { kind: 'header', value: string }
  | { kind: 'other-environment' | 'unknown' | 'mistyped' }

/** Something the run learnt earlier (an id it was given, a cursor, an Idempotency-Key it sent), by index. */
interface Earlier { kind: 'earlier', index: number }

type Body =
  | { kind: 'json', value: Value }
  | { kind: 'text', text: string }
  | { kind: 'bytes', hex: string }
  | { kind: 'deep', depth: number, open: string }
  | { kind: 'large', bytes: number }
  | { kind: 'same-as-earlier', index: number }
  /** JSON in which each string `@name@` stands for the run's token of that name. */
  | { kind: 'tokens', value: Value }
  /** A report of this many matches of never-issued tokens. */
  | { kind: 'many-matches', count: number }

export interface RequestSpec {
  operation: 'listPets' | 'createPet' | 'getPet' | 'reportLeakedTokens' | 'revokeCredentials' | 'other'
  method: string
  /** Path below the origin, or a path segment to put after `/v1/pets/` (getPet). */
  path: string | { petId: string | Earlier }
  query: Array<[string, string | Earlier]>
  auth: Auth
  headers: Record<string, string>
  idempotencyKey?: string | Earlier
  body?: Body
  /** The client address Fastify sees; anonymous requests are limited per address. */
  remoteAddress: string
  /** Milliseconds the clock moves on before the request: windows end, bans run out. */
  wait: number
  /** Sent twice at once (the second an exact copy): idempotency and limits under concurrency. */
  twice: boolean
  /** A secret-scanning report's signature: the run scanner's over the body, over other bytes, made-up, or none. */
  signature?: 'valid' | 'other-body' | 'made-up' | 'none'
}

// ---------------------------------------------------------------------------
// Values from a schema

/** `Type.Unsafe` kinds keep what JSON Schema keywords say; format int64 bounds are past a double's precision. */
function integerBounds (schema: TSchema): { min: bigint, max: bigint } {
  const min = BigInt(Math.ceil(Number(schema.minimum ?? -(2 ** 53))))
  const max = schema.format === 'int64' && Number(schema.maximum) >= 2 ** 63 ? INT64_MAX : BigInt(Math.floor(Number(schema.maximum ?? 2 ** 53)))
  return { min, max }
}

/** Code points, as JSON Schema counts a string's length. */
function codePoints (text: string): number {
  let count = 0
  for (const _ of text) count++ // eslint-disable-line @typescript-eslint/no-unused-vars
  return count
}

const ANY_UNIT = fc.constantFrom<'grapheme' | 'grapheme-ascii' | 'binary' | 'binary-ascii'>('grapheme', 'grapheme-ascii', 'binary', 'binary-ascii')

/** A valid value of a JSON Schema: the subset the request schemas use. */
function valid (schema: TSchema): fc.Arbitrary<Value> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as Value[]))
  switch (schema.type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, TSchema>
      const required = (schema.required ?? []) as string[]
      const model: Record<string, fc.Arbitrary<Value>> = {}
      for (const [name, property] of Object.entries(properties)) model[name] = valid(property)
      return fc.record(model, { requiredKeys: required }) as fc.Arbitrary<Value>
    }
    case 'integer': {
      const { min, max } = integerBounds(schema)
      // The bounds themselves, and a spread over every size of number between them.
      return fc.oneof(fc.constantFrom(min, max), fc.bigInt({ min, max })).map((v) => schema.format === 'int64' ? v : Number(v))
    }
    case 'string': {
      const minLength = Number(schema.minLength ?? 0)
      const maxLength = Number(schema.maxLength ?? 1000)
      const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined
      const fits = (s: string): boolean => {
        const length = codePoints(s)
        return length >= minLength && length <= maxLength && (pattern === undefined || pattern.test(s))
      }
      // A pattern fast-check can read (no \p{…}, no look-ahead) is generated from; any other filters.
      const fromPattern = pattern !== undefined && !/\\p|\(\?/.test(pattern.source)
        ? fc.stringMatching(pattern).filter(fits)
        : undefined
      const anyText = ANY_UNIT.chain((unit) => fc.string({ unit, minLength, maxLength })).filter(fits)
      return fromPattern === undefined ? anyText : fc.oneof(fromPattern, anyText)
    }
    case 'boolean':
      return fc.boolean()
    default:
      throw new Error(`no generator for schema type ${String(schema.type)}`)
  }
}

// ---------------------------------------------------------------------------
// Invalid values

const BIG = ['9223372036854775808', '-9223372036854775808', '18446744073709551616', '1' + '0'.repeat(400), '9'.repeat(30)]

/** JSON values no field of a body takes: each a reason to refuse. */
export const WRONG_JSON = fc.oneof(
  fc.constantFrom(
    ...['0', '-1', '1.5', '-0', '0.0', '1e400', '-1e400', '1e-400', '1E2', '2.5e0', '9223372036854775807.5', '9.223372036854775807e18', ...BIG].map((n) => new RawJson(n)),
    null, true, false, '', ' ', '\u00a0\u3000', '1', '[]', [], {}, [1], { a: 1 }, 'available ', 'AVAILABLE',
    '\u0000', 'a\u0007b', 'a\nb', '\u007f', '\u0085', '\ud800', 'x\udfffy', '\u2028', 'x'.repeat(101), '🐕'.repeat(101)
  ),
  fc.double().map((d) => Number.isFinite(d) ? new RawJson(String(d)) : null),
  fc.string({ unit: 'binary', maxLength: 120 }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n })
)

/** Right-looking JSON numbers that denote a valid int64: `1.0`, `1e3`, `10E+1`. */
const INTEGER_SPELLINGS = fc.constantFrom('1.0', '1e3', '10E+1', '100e-2', '9223372036854775807', '9.223372036854775807e18', '1.00000')
  .map((n) => new RawJson(n))

/** Query and path text that no parameter takes. */
export const WRONG_TEXT = fc.oneof(
  fc.constantFrom(
    '', ' ', '0', '-1', '+1', ' 5', '5 ', '1.5', '1.0', '1e3', '0x10', '05', '-0', 'NaN', 'Infinity', 'null', 'true', '[]',
    ...BIG, '9223372036854775807', 'available ', 'AVAILABLE', 'sold,pending', '%', '%zz', '%00', '%C3%28', '%F0%9F%90%95',
    '\u0000', 'é', '🐕', 'x'.repeat(65), 'x'.repeat(5000), 'AAAA', 'AQAAAAAAAAACAR', '..', '%2F', '%2e%2e'
  ),
  fc.string({ unit: 'binary', maxLength: 80 })
)

// ---------------------------------------------------------------------------
// Headers

const TOKEN_TEXT = fc.string({ unit: 'binary-ascii', maxLength: 60 })

const AUTH: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 60, arbitrary: fc.constant<Auth>({ kind: 'key' }) },
  { weight: 4, arbitrary: fc.constant<Auth>({ kind: 'tight-key' }) },
  { weight: 6, arbitrary: fc.constant<Auth>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.constant<Auth>({ kind: 'revoked-key' }) },
  { weight: 3, arbitrary: fc.constantFrom<Auth>({ kind: 'other-environment' }, { kind: 'unknown' }, { kind: 'mistyped' }) },
  {
    weight: 5,
    arbitrary: fc.oneof(
      fc.constantFrom('Bearer', 'Bearer ', 'bearer', 'Basic dXNlcjpwYXNz', 'Bearer a b', 'Bearer  ', 'Token abc', 'Bearer pet_live_', 'Bearer ' + 'A'.repeat(8000), ''),
      TOKEN_TEXT.map((t) => `Bearer ${t}`),
      fc.string({ unit: 'binary', maxLength: 40 }).map((t) => `Bearer ${t}`),
      TOKEN_TEXT
    ).map((value): Auth => ({ kind: 'header', value }))
  }
)

const REQUEST_ID = fc.oneof(
  fc.uuid(),
  fc.stringMatching(/^[\x21-\x7e]{1,128}$/),
  fc.constantFrom('', ' ', 'a b', 'x'.repeat(129), 'é', '\t', 'req-1')
)

export const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON',
  'application/json; charset="utf-8"', 'application/json; charset=latin1', 'application/json; charset=utf-16',
  'text/plain', 'text/json', 'application/jsonx', 'application/merge-patch+json', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', '*/*', '', 'application/json, text/plain', 'application/json; foo'
]

const ACCEPT = fc.constantFrom('application/json', '*/*', 'text/html', 'application/xml', 'application/json;q=0', 'garbage', '')

/** Headers any request may carry besides Authorization. */
export const COMMON_HEADERS: fc.Arbitrary<Record<string, string>> = fc.tuple(
  fc.record({
    'x-request-id': REQUEST_ID,
    accept: ACCEPT,
    'x-forwarded-for': fc.constantFrom('203.0.113.9', 'not-an-address', '::1'),
    'content-type': fc.constantFrom(...CONTENT_TYPES),
    'if-none-match': fc.constant('*'),
    'x-unknown': fc.string({ unit: 'binary-ascii', maxLength: 200 })
  }, { requiredKeys: [] }),
  // Rare, so that most requests reach their operation: Node meets
  // 100-continue, and any other expectation is a 417.
  fc.oneof(
    { weight: 30, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom('100-continue', '100-Continue', 'something-else', '') }
  )
).map(([headers, expect]) => expect === undefined ? headers : { ...headers, expect })

const ADDRESSES = fc.constantFrom('127.0.0.1', '10.1.2.3', '192.0.2.44', '2001:db8::1', '2001:db8::2', '::ffff:198.51.100.7')

const WAIT = fc.oneof({ weight: 30, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(1000, 30_000, 61_000, 3_600_000, 86_400_000) })

const TWICE = fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) })

// ---------------------------------------------------------------------------
// Operations

const earlier = fc.nat({ max: 1000 }).map((index): Earlier => ({ kind: 'earlier', index }))

function parameterText (value: Value): string {
  return typeof value === 'string' ? value : String(value)
}

const listQuery: fc.Arbitrary<Array<[string, string | Earlier]>> = (() => {
  const properties = ListPetsQuery.properties as Record<string, TSchema>
  const entries = Object.entries(properties).map(([name, schema]) => fc.oneof(
    { weight: 4, arbitrary: fc.constant<Array<[string, string | Earlier]>>([]) },
    { weight: 4, arbitrary: valid(schema).map((v): Array<[string, string | Earlier]> => [[name, parameterText(v)]]) },
    { weight: 1, arbitrary: WRONG_TEXT.map((v): Array<[string, string | Earlier]> => [[name, v]]) },
    // The same parameter twice.
    { weight: 1, arbitrary: fc.tuple(valid(schema), valid(schema)).map(([a, b]): Array<[string, string | Earlier]> => [[name, parameterText(a)], [name, parameterText(b)]]) }
  ))
  const cursor = fc.oneof(
    { weight: 3, arbitrary: fc.constant<Array<[string, string | Earlier]>>([]) },
    { weight: 2, arbitrary: earlier.map((e): Array<[string, string | Earlier]> => [['cursor', e]]) }
  )
  const unknown = fc.oneof(
    { weight: 8, arbitrary: fc.constant<Array<[string, string | Earlier]>>([]) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('offset', 'page', 'id', 'LIMIT', 'status[]', '', 'a'.repeat(300), '__proto__'), WRONG_TEXT).map((e): Array<[string, string | Earlier]> => [e]) }
  )
  return fc.tuple(...entries, cursor, unknown).map((lists) => lists.flat())
})()

const NEW_PET_FIELDS = Object.keys(NewPet.properties)

/** A body for POST /pets: valid, mutated field by field, or not a NewPet at all. */
const createBody: fc.Arbitrary<Body> = (() => {
  const newPet = valid(NewPet) as fc.Arbitrary<Record<string, Value>>
  const mutated = fc.tuple(newPet, fc.constantFrom(...NEW_PET_FIELDS, 'id', 'ID', 'extra', '', 'name '), fc.oneof(WRONG_JSON, valid(NewPet.properties.categoryId)), fc.boolean())
    .map(([pet, field, value, drop]): Body => {
      const copy: Record<string, Value> = { ...pet }
      if (drop && field in copy) delete copy[field]
      else copy[field] = value
      return { kind: 'json', value: copy }
    })
  return fc.oneof(
    { weight: 10, arbitrary: newPet.map((value): Body => ({ kind: 'json', value })) },
    { weight: 8, arbitrary: mutated },
    { weight: 2, arbitrary: fc.tuple(newPet, INTEGER_SPELLINGS).map(([pet, categoryId]): Body => ({ kind: 'json', value: { ...pet, categoryId } })) },
    { weight: 2, arbitrary: fc.oneof(WRONG_JSON, fc.array(newPet, { maxLength: 3 })).map((value): Body => ({ kind: 'json', value })) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom('', ' ', '{', '}', '{"name":"Rex","categoryId":1,}', '{"name":"Rex","categoryId":1}{}', '{"name":"Rex","name":"Max","categoryId":1}',
          '{"name":"Rex","name":"Rex","categoryId":1}', '{"__proto__":{"x":1},"name":"Rex","categoryId":1}', '{"constructor":{},"name":"Rex","categoryId":1}',
          '\ufeff{"name":"Rex","categoryId":1}', '{"name":"Rex","categoryId":01}', '{"name":"Rex","categoryId":NaN}', '{\'name\':\'Rex\'}',
          'null', '[]', '"Rex"', '{"name":"Rex","categoryId":1} x', '{"name":"\\ud800","categoryId":1}', '{"name":"\\u0000","categoryId":1}',
          '{"name":"Rex","categoryId":1e999999}', '{"name":"Rex","categoryId":-9223372036854775809}'),
        fc.string({ unit: 'binary', maxLength: 200 })
      ).map((text): Body => ({ kind: 'text', text }))
    },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 60 }).map((bytes): Body => ({ kind: 'bytes', hex: Buffer.from(bytes).toString('hex') })) },
    // Malformed UTF-8 inside a string: overlong, lone continuation, truncated, an encoded surrogate.
    { weight: 1, arbitrary: fc.constantFrom('c0af', '80', 'e282', 'eda080', 'f4908080', 'ff').map((bad): Body => ({ kind: 'bytes', hex: Buffer.from('{"name":"R').toString('hex') + bad + Buffer.from('x","categoryId":1}').toString('hex') })) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"a":', '{"name":')).map(([depth, open]): Body => ({ kind: 'deep', depth, open })) },
    { weight: 1, arbitrary: fc.integer({ min: 16 * 1024 - 64, max: 64 * 1024 }).map((bytes): Body => ({ kind: 'large', bytes })) },
    { weight: 2, arbitrary: earlier.map((e): Body => ({ kind: 'same-as-earlier', index: e.index })) }
  )
})()

const IDEMPOTENCY_KEY = (() => {
  const schema = CreatePetHeaders.properties['idempotency-key']
  return fc.oneof(
    { weight: 3, arbitrary: valid(schema).map(parameterText) },
    { weight: 2, arbitrary: earlier },
    { weight: 1, arbitrary: fc.constantFrom('', '"', '""', '"abc', '"a\\"b"', 'x'.repeat(255), 'x'.repeat(256), '"' + 'x'.repeat(255) + '"', 'é', 'a\tb', ' ') }
  )
})()

const listPets: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('listPets' as const),
  method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD'),
  path: fc.constantFrom('/v1/pets', '/v1/pets', '/v1/pets', '/v1/%70ets', '/v1/pets?'),
  query: listQuery,
  auth: AUTH,
  headers: COMMON_HEADERS,
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
})

const createPet: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('createPet' as const),
  method: fc.constant('POST'),
  path: fc.constant('/v1/pets'),
  query: fc.constant<Array<[string, string]>>([]),
  auth: AUTH,
  headers: fc.tuple(COMMON_HEADERS, fc.constantFrom(...CONTENT_TYPES.slice(0, 5), undefined, 'text/plain', 'application/json; charset=latin1'))
    .map(([headers, contentType]) => {
      const { 'content-type': _, ...rest } = headers
      return contentType === undefined ? rest : { ...rest, 'content-type': contentType }
    }),
  idempotencyKey: fc.option(IDEMPOTENCY_KEY, { nil: undefined, freq: 2 }),
  body: fc.option(createBody, { nil: undefined, freq: 20 }),
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
}, { requiredKeys: ['operation', 'method', 'path', 'query', 'auth', 'headers', 'remoteAddress', 'wait', 'twice'] })

const petId = fc.oneof(
  { weight: 3, arbitrary: valid(PetIdParams.properties.petId).map(parameterText) },
  { weight: 3, arbitrary: earlier },
  // Not `.` or `..`: a URL parser would take those as dot segments, and the request for another path.
  { weight: 2, arbitrary: WRONG_TEXT.map(encodeURIComponent).filter((segment) => !/^(\.|%2e){1,2}$/i.test(segment)) },
  { weight: 1, arbitrary: fc.constantFrom('%zz', '%', '1%2F2', 'x'.repeat(1001), '1'.repeat(1001), '%F0%9F%90', '1;x', '1?', '1%23x') }
)

const getPet: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('getPet' as const),
  method: fc.constantFrom('GET', 'GET', 'HEAD'),
  path: petId.map((id) => ({ petId: id })),
  query: fc.oneof(
    { weight: 5, arbitrary: fc.constant<Array<[string, string]>>([]) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('limit', 'x'), WRONG_TEXT).map((e): Array<[string, string]> => [e]) }
  ),
  auth: AUTH,
  headers: COMMON_HEADERS,
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
})

const OTHER_PATHS = [
  '/v1/pets', '/v1/pets/1', '/v1', '/v1/', '/v1/pets/1/2', '/v1/pets/', '/v1//pets', '/v1/PETS', '/v1/pet', '/v1/pets.json',
  '/v1/categories', '/v2/pets', '/pets', '/', '/v1/%zz', '/v1/pets%2F1', '/v1/' + 'a'.repeat(3000), '/v1/pets/' + 'a'.repeat(2000) + '/x', '/V1/pets'
]

/** Requests that reach no operation: other methods on the API's paths, and paths it does not have. */
const other: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('other' as const),
  method: fc.constantFrom(...METHODS.filter((m) => m !== 'CONNECT')),
  path: fc.constantFrom(...OTHER_PATHS),
  query: fc.constant<Array<[string, string]>>([]),
  auth: AUTH,
  headers: COMMON_HEADERS,
  body: fc.option(createBody, { nil: undefined, freq: 2 }),
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
}, { requiredKeys: ['operation', 'method', 'path', 'query', 'auth', 'headers', 'remoteAddress', 'wait', 'twice'] })

/** The run's tokens a report or a revocation may name (never its working keys: those must stay live), and odd strings. */
const LEAK_TOKEN: fc.Arbitrary<Value> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('@leakable@', '@revoked@', '@unknown@', '@mistyped@', '@otherEnvironment@') },
  {
    weight: 3,
    arbitrary: fc.constantFrom('', ' ', 'pet_live_', 'pet_test_', `pet_live_${'a'.repeat(36)}`, `pet_live_${'0'.repeat(37)}`, 'PET_LIVE_' + 'A'.repeat(36),
      ' @unknown@', 'pet_live_\u0000', 'pet_live_é' + 'a'.repeat(35), '🐶'.repeat(20), 'x'.repeat(5000), 'ghp_' + 'a'.repeat(36))
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 80 }) },
  { weight: 1, arbitrary: WRONG_JSON }
)

const MATCH: fc.Arbitrary<Value> = fc.record({
  token: LEAK_TOKEN,
  type: fc.constantFrom('petstore_api_token', 'petstore_api_token', 'petstore_api_token', 'petstore_live_api_token', '', 'x'.repeat(300)),
  url: fc.constantFrom('https://github.com/octocat/Hello-World/blob/main/.env', '', 'not a url', 'x'.repeat(3000)),
  source: fc.constantFrom('content', 'commit', 'npm', ''),
  extra: fc.constantFrom(1, 'x', null)
}, { requiredKeys: ['token', 'type'] }) as fc.Arbitrary<Value>

/** Bodies that are not JSON, or JSON of the wrong kind: what both leak routes must refuse with a 4xx. */
const BAD_LEAK_TEXT = fc.constantFrom('', ' ', '[', ']', '{', '[{"token":', '[{"token":"x","type":"y"},]', '[{"token":"x","type":"y"}]x', 'null', '[]', '{}', '[null]',
  '[1]', '[[]]', '"pet_live_"', '\ufeff[{"token":"x","type":"y"}]', '[{"token":"x","token":"y","type":"z"}]', '[{"__proto__":{"token":"x"},"type":"y"}]',
  '{"credentials":', '{"credentials":null}', '{"credentials":"pet_live_"}', '{"credentials":[]}', '{"credentials":[1]}', '{"credentials":["x"],"credentials":[]}',
  '{"credentials":["x"],"extra":1}', '{"__proto__":{"credentials":["x"]}}', '{"credentials":["\ud800"]}')

function leakBody (json: fc.Arbitrary<Value>): fc.Arbitrary<Body> {
  return fc.oneof(
    { weight: 8, arbitrary: json.map((value): Body => ({ kind: 'tokens', value })) },
    { weight: 3, arbitrary: fc.oneof(BAD_LEAK_TEXT, fc.string({ unit: 'binary', maxLength: 200 })).map((text): Body => ({ kind: 'text', text })) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 60 }).map((bytes): Body => ({ kind: 'bytes', hex: Buffer.from(bytes).toString('hex') })) },
    { weight: 1, arbitrary: fc.constantFrom('c0af', '80', 'eda080', 'ff').map((bad): Body => ({ kind: 'bytes', hex: Buffer.from('[{"token":"p').toString('hex') + bad + Buffer.from('","type":"t"}]').toString('hex') })) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"credentials":[', '[{"token":')).map(([depth, open]): Body => ({ kind: 'deep', depth, open })) }
  )
}

const reportBody = fc.oneof(
  { weight: 10, arbitrary: leakBody(fc.oneof({ weight: 5, arbitrary: fc.array(MATCH, { minLength: 1, maxLength: 5 }) }, { weight: 1, arbitrary: fc.array(LEAK_TOKEN, { maxLength: 3 }) }, { weight: 1, arbitrary: MATCH })) },
  // 1,000 matches are allowed, 1,001 are not; 20,000 pass 1 MiB.
  { weight: 1, arbitrary: fc.constantFrom(1000, 1001, 20_000).map((count): Body => ({ kind: 'many-matches', count })) }
)

const revocationBody = leakBody(fc.oneof(
  { weight: 6, arbitrary: fc.record({ credentials: fc.array(LEAK_TOKEN, { minLength: 1, maxLength: 5 }) }) as fc.Arbitrary<Value> },
  // 100 tokens are allowed, 101 are not; so is nothing but credentials.
  { weight: 1, arbitrary: fc.constantFrom(0, 100, 101, 1000).map((n): Value => ({ credentials: Array.from({ length: n }, (_, i) => i % 2 === 0 ? '@unknown@' : `pet_live_${i}`) })) },
  { weight: 1, arbitrary: fc.tuple(fc.array(LEAK_TOKEN, { minLength: 1, maxLength: 2 }), fc.constantFrom('extra', 'Credentials', ''), WRONG_JSON).map(([credentials, field, value]): Value => ({ credentials, [field]: value })) },
  { weight: 1, arbitrary: fc.oneof(WRONG_JSON, fc.array(LEAK_TOKEN, { maxLength: 3 })).map((credentials): Value => ({ credentials })) }
))

const LEAK_HEADERS = fc.tuple(COMMON_HEADERS, fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', undefined, 'text/plain', 'application/x-www-form-urlencoded'))
  .map(([headers, contentType]) => {
    const { 'content-type': _, ...rest } = headers
    return contentType === undefined ? rest : { ...rest, 'content-type': contentType }
  })

const reportLeakedTokens: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('reportLeakedTokens' as const),
  method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET', 'PUT'),
  path: fc.constant('/v1/secret-scanning'),
  query: fc.constant<Array<[string, string]>>([]),
  auth: fc.oneof({ weight: 5, arbitrary: fc.constant<Auth>({ kind: 'none' }) }, { weight: 1, arbitrary: AUTH }),
  headers: LEAK_HEADERS,
  body: fc.option(reportBody, { nil: undefined, freq: 20 }),
  signature: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'valid', 'other-body', 'made-up', 'none'),
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
}, { requiredKeys: ['operation', 'method', 'path', 'query', 'auth', 'headers', 'signature', 'remoteAddress', 'wait', 'twice'] })

const revokeCredentials: fc.Arbitrary<RequestSpec> = fc.record({
  operation: fc.constant('revokeCredentials' as const),
  method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET', 'DELETE'),
  path: fc.constant('/v1/credentials/revoke'),
  query: fc.constant<Array<[string, string]>>([]),
  auth: fc.oneof({ weight: 5, arbitrary: fc.constant<Auth>({ kind: 'none' }) }, { weight: 1, arbitrary: AUTH }),
  headers: LEAK_HEADERS,
  body: fc.option(revocationBody, { nil: undefined, freq: 20 }),
  remoteAddress: ADDRESSES,
  wait: WAIT,
  twice: TWICE
}, { requiredKeys: ['operation', 'method', 'path', 'query', 'auth', 'headers', 'remoteAddress', 'wait', 'twice'] })

export const requestSpec: fc.Arbitrary<RequestSpec> = fc.oneof(
  { weight: 3, arbitrary: listPets },
  { weight: 4, arbitrary: createPet },
  { weight: 3, arbitrary: getPet },
  { weight: 2, arbitrary: other },
  { weight: 2, arbitrary: reportLeakedTokens },
  { weight: 1, arbitrary: revokeCredentials }
)

// ---------------------------------------------------------------------------
// From a description to what is sent

export interface RunState {
  /** `leakable`: a key only reports and revocations name, live until the first of them. */
  tokens: { key: string, tight: string, revoked: string, otherEnvironment: string, unknown: string, mistyped: string, leakable: string }
  /** The headers with which the run's secret scanner signs these bytes. */
  sign: (body: string | Buffer) => Record<string, string>
  /** Ids of animals the run created, as digits. */
  ids: string[]
  /** Cursors from `Link: rel="next"` headers. */
  cursors: string[]
  /** Idempotency keys the run sent. */
  idempotencyKeys: string[]
  /** Bodies of POST /pets the run sent. */
  bodies: Array<string | Buffer>
}

export interface SentRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
  remoteAddress: string
}

function pick<T> (list: readonly T[], index: number, fallback: T): T {
  return list.length === 0 ? fallback : list[index % list.length] as T
}

export function writeJson (value: Value): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') return JSON.stringify(value)
  if (typeof value === 'bigint' || value instanceof RawJson) return value.toString()
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(writeJson).join(',')}]`
  return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${writeJson(v)}`).join(',')}}`
}

function bodyOf (body: Body, state: RunState): string | Buffer {
  switch (body.kind) {
    case 'json': return writeJson(body.value)
    case 'text': return body.text
    case 'bytes': return Buffer.from(body.hex, 'hex')
    case 'deep': return body.open.repeat(body.depth)
    case 'large': return `{"name":"Rex","categoryId":1,"padding":"${'x'.repeat(body.bytes)}"}`
    case 'same-as-earlier': return pick(state.bodies, body.index, '{"name":"Rex","categoryId":1}')
    case 'tokens': return writeJson(body.value).replace(/"@(\w+)@"/g, (text, name: string) => name in state.tokens ? JSON.stringify(state.tokens[name as keyof RunState['tokens']]) : text)
    case 'many-matches': return writeJson(Array.from({ length: body.count }, (_, i) => ({ token: `pet_live_${String(i).padStart(36, '0')}`, type: 'petstore_api_token', url: 'https://example.com/'.padEnd(40, 'x') })))
  }
}

function authorization (auth: Auth, state: RunState): string | undefined {
  const { tokens } = state
  switch (auth.kind) {
    case 'key': return `Bearer ${tokens.key}`
    case 'tight-key': return `Bearer ${tokens.tight}`
    case 'revoked-key': return `Bearer ${tokens.revoked}`
    case 'other-environment': return `Bearer ${tokens.otherEnvironment}`
    case 'unknown': return `Bearer ${tokens.unknown}`
    case 'mistyped': return `Bearer ${tokens.mistyped}`
    case 'none': return undefined
    case 'header': return auth.value
  }
}

/**
 * A header value as it can arrive over HTTP/1.1: bytes, read as Latin-1,
 * without the control characters Node's parser refuses (the raw-socket
 * test sends those).
 */
function onTheWire (value: string): string {
  return value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?')
}

export function materialize (spec: RequestSpec, state: RunState): SentRequest {
  const resolve = (value: string | Earlier, list: string[], fallback: string): string =>
    typeof value === 'string' ? value : pick(list, value.index, fallback)
  const path = typeof spec.path === 'string' ? spec.path : `/v1/pets/${resolve(spec.path.petId, state.ids, '1')}`
  const query = spec.query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(resolve(value, state.cursors, 'AAAA'))}`)
  const url = query.length === 0 ? path : `${path}${path.includes('?') ? '&' : '?'}${query.join('&')}`
  const headers: Record<string, string> = { ...spec.headers }
  const auth = authorization(spec.auth, state)
  if (auth !== undefined) headers.authorization = auth
  if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = resolve(spec.idempotencyKey, state.idempotencyKeys, 'key-0')
  for (const [name, value] of Object.entries(headers)) headers[name] = onTheWire(value)
  const payload = spec.body === undefined ? undefined : bodyOf(spec.body, state)
  if (spec.signature !== undefined && spec.signature !== 'none') {
    const signed = state.sign(spec.signature === 'valid' ? payload ?? '' : 'other bytes')
    Object.assign(headers, spec.signature === 'made-up' ? { ...signed, 'github-public-key-identifier': 'made-up' } : signed)
  }
  return { method: spec.method, url, headers, remoteAddress: spec.remoteAddress, ...(payload === undefined ? {} : { payload }) }
}
