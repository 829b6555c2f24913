// Generated requests for the admin API (docs/KEYS.md: The admin API), built from
// its OpenAPI document as served: for each operation, its path parameters,
// query parameters and body drawn from the schemas the document gives
// them, valid or mutated one field at a time (wrong types, unknown fields,
// numbers past int64, control characters, times in the past …), and
// requests that reach no operation. As in requests.ts, a request is a
// plain description that fast-check prints and shrinks; `materialize`
// turns it into what is sent, with the ids, tokens and cursors the run has
// learnt by then.
import { METHODS } from 'node:http'
import fc from 'fast-check'
import { COMMON_HEADERS, CONTENT_TYPES, RawJson, WRONG_JSON, WRONG_TEXT, writeJson, type SentRequest, type Value } from './requests.js'

type Schema = Record<string, unknown>
interface Earlier { kind: 'earlier', index: number }

/** Who the request says it is. */
type AdminAuth = 'admin' | 'none' | 'wrong' | 'api-key' | 'near-miss' | { header: string }

type AdminBody = { kind: 'json', value: Value } | { kind: 'text', text: string } | { kind: 'large', bytes: number }

export interface AdminSpec {
  operation: string
  method: string
  /** The document's path (`/keys/{id}`), or any path for requests that reach no operation. */
  path: string
  id?: string | Earlier
  query: Array<[string, string | Earlier]>
  auth: AdminAuth
  headers: Record<string, string>
  body?: AdminBody
  /** Wrong tokens are counted per address: they come from addresses of their own, mostly. */
  remoteAddress: string
  wait: number
}

export interface AdminRunState {
  adminToken: string
  /** An API key of the public API: never accepted here. */
  apiKey: string
  ids: string[]
  /** Tokens of keys the run made or rolled, for POST /keys/lookup. */
  tokens: string[]
  cursors: string[]
}

/** Resolves `$ref`s into the document; every schema the generators read goes through here. */
function resolver (document: Schema): (schema: unknown) => Schema {
  const at = (ref: string): Schema => {
    let node: unknown = document
    for (const token of ref.slice(2).split('/')) node = (node as Schema)[token.replace(/~1/g, '/').replace(/~0/g, '~')]
    if (typeof node !== 'object' || node === null) throw new Error(`${ref} points to nothing`)
    return node as Schema
  }
  const resolve = (schema: unknown): Schema => {
    const node = schema as Schema
    return typeof node.$ref === 'string' ? resolve(at(node.$ref)) : node
  }
  return resolve
}

/** Future instants, for the document's date-times: from a day after `from` to eight years on. */
function dateTimes (from: number): fc.Arbitrary<string> {
  return fc.integer({ min: from + 86_400_000, max: from + 8 * 365 * 86_400_000 }).map((ms) => new Date(ms).toISOString())
}

/** A valid value of one of the document's schemas: the subset the admin API's requests use. */
function validOf (resolve: (schema: unknown) => Schema, from: number): (schema: unknown) => fc.Arbitrary<Value> {
  const valid = (raw: unknown): fc.Arbitrary<Value> => {
    const schema = resolve(raw)
    if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as Value[]))
    if (Array.isArray(schema.type)) return fc.oneof(...(schema.type as string[]).map((type) => valid({ ...schema, type })))
    switch (schema.type) {
      case 'null': return fc.constant(null)
      case 'boolean': return fc.boolean()
      case 'object': {
        const model: Record<string, fc.Arbitrary<Value>> = {}
        for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, unknown>)) model[name] = valid(property)
        return fc.record(model, { requiredKeys: (schema.required ?? []) as string[] }) as fc.Arbitrary<Value>
      }
      case 'integer': {
        const min = BigInt(Number(schema.minimum ?? 0))
        const max = BigInt(Number(schema.maximum ?? Number.MAX_SAFE_INTEGER))
        return fc.oneof(fc.constantFrom(min, max), fc.bigInt({ min, max }), fc.bigInt({ min, max: min + 100n > max ? max : min + 100n }))
      }
      case 'array': {
        const items = valid(schema.items)
        const constraints = { minLength: Number(schema.minItems ?? 0), maxLength: Number(schema.maxItems ?? 5) }
        return schema.uniqueItems === true
          ? fc.uniqueArray(items, { ...constraints, comparator: 'SameValueZero' })
          : fc.array(items, constraints)
      }
      case 'string': {
        if (schema.format === 'date-time') return dateTimes(from)
        const minLength = Number(schema.minLength ?? 0)
        const maxLength = Number(schema.maxLength ?? 100)
        const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined
        const fits = (text: string): boolean => [...text].length >= minLength && [...text].length <= maxLength && (pattern?.test(text) ?? true)
        const anyText = fc.constantFrom<'grapheme' | 'grapheme-ascii' | 'binary'>('grapheme', 'grapheme-ascii', 'binary')
          .chain((unit) => fc.string({ unit, minLength, maxLength: Math.min(maxLength, 60) })).filter(fits)
        // fast-check reads patterns without \p{…} or look-ahead, and generates
        // from them alone: random text filtered through a pattern as strict as a
        // date's (`^[0-9]{4}-…$`) would almost never pass, and the filter would
        // retry for ever. The others filter.
        return pattern !== undefined && !/\\p|\(\?/.test(pattern.source) ? fc.stringMatching(pattern).filter(fits) : anyText
      }
      default:
        throw new Error(`no generator for schema type ${String(schema.type)}`)
    }
  }
  return valid
}

/** Values no field of these bodies takes, besides WRONG_JSON: times in the past or malformed, scopes unknown or repeated. */
const WRONG_ADMIN_JSON = fc.oneof(
  WRONG_JSON,
  fc.constantFrom<Value>(
    '2020-01-01T00:00:00Z', '2027-03-10T12:00:00Z', '2027-02-30T00:00:00Z', '2027-03-10 12:00:00', '2027-03-10', 'tomorrow',
    [], ['pets:read', 'pets:read'], ['pets:delete'], ['pets:read', 'pets:write', 'pets:read'], 'pets:read', 'gold', 'Enterprise',
    new RawJson('604801'), new RawJson('-1'), new RawJson('9999999999'), new RawJson('10000000000')
  )
)

const ADMIN_ADDRESSES = ['127.0.0.1', '10.1.2.3', '2001:db8::1']
const GUESSING_ADDRESSES = ['192.0.2.44', '198.51.100.7', '2001:db8:1::9']

const WAIT = fc.oneof({ weight: 40, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(1000, 61_000) })

const earlier = fc.nat({ max: 1000 }).map((index): Earlier => ({ kind: 'earlier', index }))

/** Who sends: the admin token mostly, from the operators' addresses; the other kinds from addresses of their own, so that the run is not locked out. */
const AUTH: fc.Arbitrary<[AdminAuth, string]> = fc.oneof(
  { weight: 85, arbitrary: fc.constantFrom(...ADMIN_ADDRESSES).map((address): [AdminAuth, string] => ['admin', address]) },
  { weight: 2, arbitrary: fc.constantFrom(...GUESSING_ADDRESSES).map((address): [AdminAuth, string] => ['admin', address]) },
  {
    weight: 10,
    arbitrary: fc.tuple(
      fc.oneof(
        fc.constantFrom<AdminAuth>('none', 'wrong', 'api-key', 'near-miss'),
        fc.oneof(fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer x', ''), fc.string({ unit: 'binary-ascii', maxLength: 60 }))
          .map((header): AdminAuth => ({ header }))
      ),
      fc.constantFrom(...GUESSING_ADDRESSES)
    )
  }
)

function text (value: Value): string {
  return typeof value === 'string' ? value : value instanceof RawJson ? value.text : String(value)
}

/** Every operation of the document, and requests that reach none, as one arbitrary. */
export function adminRequestSpec (document: Schema, from: number): fc.Arbitrary<AdminSpec> {
  const resolve = resolver(document)
  const valid = validOf(resolve, from)
  const paths = document.paths as Record<string, Record<string, Schema>>
  const arbitraries: Array<{ weight: number, arbitrary: fc.Arbitrary<AdminSpec> }> = []
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const parameters = ((operation.parameters ?? []) as unknown[]).map(resolve)
      const inPath = parameters.find((p) => p.in === 'path')
      const id = inPath === undefined
        ? fc.constant(undefined)
        : fc.oneof(
          { weight: 6, arbitrary: earlier },
          { weight: 2, arbitrary: valid(inPath.schema).map(text) },
          { weight: 1, arbitrary: WRONG_TEXT.map(encodeURIComponent).filter((s) => s !== '' && !/^(\.|%2e){1,2}$/i.test(s)) }
        )
      const queries = parameters.filter((p) => p.in === 'query').map((p) => {
        const name = String(p.name)
        return fc.oneof(
          { weight: 4, arbitrary: fc.constant<Array<[string, string | Earlier]>>([]) },
          { weight: 4, arbitrary: (name === 'cursor' ? earlier : valid(p.schema).map(text)).map((v): Array<[string, string | Earlier]> => [[name, v]]) },
          { weight: 1, arbitrary: WRONG_TEXT.map((v): Array<[string, string | Earlier]> => [[name, v]]) }
        )
      })
      const unknownQuery = fc.oneof(
        { weight: 12, arbitrary: fc.constant<Array<[string, string]>>([]) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom('offset', 'page', 'LIMIT', '', '__proto__'), WRONG_TEXT).map((e): Array<[string, string]> => [e]) }
      )
      const query = fc.tuple(...queries, unknownQuery).map((lists) => lists.flat())
      const bodySchema = ((operation.requestBody as Schema | undefined)?.content as Record<string, { schema: unknown }> | undefined)?.['application/json']?.schema
      let body: fc.Arbitrary<AdminBody | undefined> = fc.constant(undefined)
      if (bodySchema !== undefined) {
        const schema = resolve(bodySchema)
        const fields = Object.keys((schema.properties ?? {}) as object)
        const good = valid(schema) as fc.Arbitrary<Record<string, Value>>
        const mutated = fc.tuple(good, fc.constantFrom(...fields, 'id', 'token', 'revoked', 'extra'), WRONG_ADMIN_JSON, fc.boolean())
          .map(([value, field, wrong, drop]): AdminBody => {
            const copy: Record<string, Value> = { ...value }
            if (drop && field in copy) delete copy[field]
            else copy[field] = wrong
            return { kind: 'json', value: copy }
          })
        body = fc.oneof(
          { weight: 10, arbitrary: good.map((value): AdminBody => ({ kind: 'json', value })) },
          { weight: 6, arbitrary: mutated },
          { weight: 1, arbitrary: fc.oneof(WRONG_JSON.map((value): AdminBody => ({ kind: 'json', value })), fc.constantFrom('', '{', 'null', '[]', '{"plan":"free",}', '{"plan":"free"}{}', '{"token":"a","token":"b"}').map((t): AdminBody => ({ kind: 'text', text: t }))) },
          { weight: 1, arbitrary: fc.integer({ min: 16 * 1024 - 64, max: 40 * 1024 }).map((bytes): AdminBody => ({ kind: 'large', bytes })) },
          { weight: 1, arbitrary: fc.constant(undefined) }
        )
      }
      const contentType = bodySchema === undefined
        ? fc.constant(undefined)
        : fc.oneof({ weight: 12, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES, undefined) })
      // An operation that makes something (a POST to a collection) comes up more: what it makes, later requests use.
      const makes = method === 'post' && inPath === undefined
      arbitraries.push({
        weight: makes ? 9 : 3,
        arbitrary: fc.record({
          operation: fc.constant(String(operation.operationId)),
          method: fc.constant(method.toUpperCase()),
          path: fc.constant(path),
          id,
          query,
          auth: AUTH,
          headers: fc.tuple(COMMON_HEADERS, contentType).map(([headers, type]) => {
            const { 'content-type': _, ...rest } = headers
            return type === undefined ? rest : { ...rest, 'content-type': type }
          }),
          body,
          wait: WAIT
        }).map(({ auth: [auth, remoteAddress], ...spec }): AdminSpec => ({ ...spec, auth, remoteAddress }))
      })
    }
  }
  // Other methods on the document's paths, and paths it does not have.
  const other = fc.record({
    operation: fc.constant('other'),
    method: fc.constantFrom(...METHODS.filter((m) => m !== 'CONNECT')),
    path: fc.constantFrom(...Object.keys(paths), '/', '/keys/1/2', '/keys/', '//keys', '/KEYS', '/keys/lookup/x', '/usage', '/keys/%zz', '/' + 'a'.repeat(3000)),
    id: fc.oneof(earlier, fc.constant('1')),
    query: fc.constant<Array<[string, string | Earlier]>>([]),
    auth: AUTH,
    headers: COMMON_HEADERS,
    wait: WAIT
  }).map(({ auth: [auth, remoteAddress], ...spec }): AdminSpec => ({ ...spec, auth, remoteAddress }))
  return fc.oneof(...arbitraries, { weight: 2, arbitrary: other })
}

function pick<T> (list: readonly T[], index: number, fallback: T): T {
  return list.length === 0 ? fallback : list[index % list.length] as T
}

/** As requests.ts: a header value as it can arrive over HTTP/1.1. */
function onTheWire (value: string): string {
  return value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?')
}

export function materializeAdmin (spec: AdminSpec, state: AdminRunState): SentRequest {
  const resolve = (value: string | Earlier, list: string[], fallback: string): string =>
    typeof value === 'string' ? value : pick(list, value.index, fallback)
  const id = spec.id === undefined ? '1' : resolve(spec.id, state.ids, '1')
  const path = `/admin/v1${spec.path.replace('{id}', id)}`
  const query = spec.query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(resolve(value, state.cursors, '1'))}`)
  const url = query.length === 0 ? path : `${path}?${query.join('&')}`
  const headers: Record<string, string> = { ...spec.headers }
  const { adminToken } = state
  const auth = spec.auth
  if (auth === 'admin') headers.authorization = `Bearer ${adminToken}`
  else if (auth === 'wrong') headers.authorization = 'Bearer wrong-admin-token-of-the-right-length-xx'
  else if (auth === 'api-key') headers.authorization = `Bearer ${state.apiKey}`
  else if (auth === 'near-miss') headers.authorization = `Bearer ${adminToken.slice(0, -1)}${adminToken.endsWith('A') ? 'B' : 'A'}`
  else if (typeof auth === 'object') headers.authorization = auth.header
  for (const [name, value] of Object.entries(headers)) headers[name] = onTheWire(value)
  let payload: string | undefined
  if (spec.body?.kind === 'json') {
    // A lookup's token is one the run was given, mostly.
    const value = spec.body.value
    const sentToken = typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RawJson) ? value.token : undefined
    payload = spec.operation === 'findKeyByToken' && typeof sentToken === 'string' && state.tokens.length > 0 && sentToken.length % 3 !== 0
      ? writeJson({ ...(value as Record<string, Value>), token: pick(state.tokens, sentToken.length, '') })
      : writeJson(value)
  } else if (spec.body?.kind === 'text') {
    payload = spec.body.text
  } else if (spec.body?.kind === 'large') {
    payload = `{"plan":"free","name":"${'x'.repeat(spec.body.bytes)}"}`
  }
  return { method: spec.method, url, headers, remoteAddress: spec.remoteAddress, ...(payload === undefined ? {} : { payload }) }
}
