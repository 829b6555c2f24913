// Checks a response against the service's own OpenAPI document: that its
// status is documented for the operation the request reached, that every
// header it carries is documented there and fits its schema (and that the
// required ones are present), and that its body fits the response schema.
// A request that reaches no operation (an unknown path, another method, a
// request the HTTP layer refused) must still get a documented Error body.
//
// The schemas are compiled by Ajv for JSON Schema 2020-12, the dialect of
// OpenAPI 3.1, from the document itself: the whole document is added to
// Ajv as one schema resource, and each schema is compiled as a `$ref` to
// its JSON pointer in it, so that a `$ref` inside it (`#/components/…`)
// resolves as it would in the document. Reference Objects outside schemas
// (a response or header given as `{ "$ref": "#/components/responses/…" }`)
// are followed here before the pointer is taken. An event's body is checked
// against the document's webhook of its type the same way.
// https://spec.openapis.org/oas/v3.1.0#reference-object
import assert from 'node:assert/strict'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { isLosslessNumber, parse } from 'lossless-json'

/** Headers of the transport (RFC 9110 §7, §8, RFC 9112) that a document need not describe. */
const TRANSPORT_HEADERS = new Set([
  'content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary'
])

/** Where the document is put in Ajv: any absolute URI will do, it is never fetched. */
const DOCUMENT_ID = 'https://openapi.invalid/document.json'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A response as any client received it: header names in any case, values as sent. */
export interface ReceivedResponse {
  status: number
  headers: Iterable<[string, string]>
  body: string
}

/** An answer of Fastify's `inject`, as the checker reads it: a header sent twice is one value, joined as HTTP joins it. */
export function receivedOf (response: { statusCode: number, headers: Record<string, string | string[] | number | undefined>, body: string }): ReceivedResponse {
  return {
    status: response.statusCode,
    headers: Object.entries(response.headers).map(([name, value]): [string, string] => [name, Array.isArray(value) ? value.join(', ') : String(value)]),
    body: response.body
  }
}

interface CheckedRequest {
  method: string
  /** The request target as sent: origin form (`/v1/pets?limit=1`) or absolute form. */
  url: string
}

interface CheckResult {
  /** `operationId` of the operation the request reached, if any. */
  operation: string | undefined
  /** What does not match the document; empty when all does. */
  problems: string[]
}

/** Headers HTTP itself requires on answers that reach no operation (`Allow` on a 405). */
const UNMATCHED_HEADERS = new Set(['allow'])

interface Operation {
  id: string
  method: string
  /** `/pets/{petId}` as a pattern on the path below the server's base path. */
  pattern: RegExp
  /** Whether its path has a template (`{petId}`): a concrete path is matched first. */
  templated: boolean
  /** JSON pointer to the Operation Object. */
  pointer: string
}

/**
 * JSON Schema validators compare numbers as doubles, which cannot tell
 * 9223372036854775807 from 9223372036854775808. Every integer beyond 2^53
 * in a body, a header or the document is given a stand-in double instead,
 * chosen so that it compares with every bound and constant of the document
 * exactly as the true integer does: the document's own big integers keep
 * their order and stay distinct, and a value between two of them lands in
 * the gap between their stand-ins. Integers within 2^53 are already exact.
 */
class BigIntegers {
  /** The document's big integers, by magnitude, for each sign. */
  readonly #positive: bigint[]
  readonly #negative: bigint[]

  constructor (values: Iterable<bigint>) {
    const unique = [...new Set(values)].filter((v) => !isSafe(v))
    this.#positive = unique.filter((v) => v > 0n).sort(compare)
    this.#negative = unique.filter((v) => v < 0n).map((v) => -v).sort(compare)
  }

  /** The value itself when a double holds it, else its stand-in. */
  standIn (value: bigint): number {
    if (isSafe(value)) return Number(value)
    const magnitude = value < 0n ? -value : value
    const known = value < 0n ? this.#negative : this.#positive
    const below = known.filter((v) => v < magnitude).length
    const rank = 2 * below + (known.includes(magnitude) ? 1 : 0)
    // Doubles near 2^60 are 256 apart; every stand-in is a whole multiple of 1024 past it.
    const standIn = 2 ** 60 + rank * 1024
    return value < 0n ? -standIn : standIn
  }
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER)
const isSafe = (value: bigint): boolean => value <= SAFE && value >= -SAFE
const compare = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0)

/** The exact integer a JSON number literal denotes (`1e3` is 1000), or undefined for a fraction. */
export function exactInteger (literal: string): bigint | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (match === null) return undefined
  const [, sign = '', whole = '', fraction = '', exponentText = '0'] = match
  const digits = BigInt(whole + fraction)
  // A literal with an exponent this large is no int64 either way; its size is all that matters.
  const exponent = Math.min(Number(exponentText), 400) - fraction.length
  let value: bigint
  if (exponent >= 0) value = digits * 10n ** BigInt(exponent)
  else {
    const divisor = 10n ** BigInt(-exponent)
    if (digits % divisor !== 0n) return undefined
    value = digits / divisor
  }
  return sign === '-' ? -value : value
}

/** Every integer literal in a value parsed by lossless-json's `parse`, which keeps each number as its literal so that nothing is rounded before it is checked. */
function * integersIn (node: unknown): Generator<bigint> {
  if (isLosslessNumber(node)) {
    const integer = exactInteger(node.value)
    if (integer !== undefined) yield integer
  } else if (Array.isArray(node)) {
    for (const item of node) yield * integersIn(item)
  } else if (typeof node === 'object' && node !== null) {
    for (const value of Object.values(node)) yield * integersIn(value)
  }
}

function unescapePointer (token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~')
}

function escapePointer (token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}

function clip (text: string, max = 300): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export class OpenApiChecker {
  readonly #document: Json
  readonly #ajv: Ajv2020
  readonly #numbers: BigIntegers
  readonly #operations: Operation[]
  readonly #basePath: string
  readonly #validators = new Map<string, ValidateFunction>()
  /** Every header the document describes anywhere, by lower-case name: pointer to its Header Object. */
  readonly #knownHeaders = new Map<string, string>()

  /** `text`: the document as served, read exactly (its int64 bounds are past 2^53). */
  constructor (text: string) {
    const exact = parse(text)
    this.#numbers = new BigIntegers(integersIn(exact))
    this.#document = this.#toValidatable(exact)
    if (!isRecord(this.#document)) throw new Error('the OpenAPI document is not an object')
    this.#ajv = new Ajv2020({
      // The document holds OpenAPI's own keywords (`paths`, `example`,
      // `discriminator`, `x-…`) beside JSON Schema's: ignored, not refused.
      strict: false,
      allErrors: true,
      // Unknown formats are ignored by JSON Schema 2020-12 too; say nothing of them.
      logger: false
    })
    addFormats.default(this.#ajv)
    this.#ajv.addSchema({ ...this.#document, $id: DOCUMENT_ID })
    // The Error body of statuses no operation documents (404 for an unknown path, 405, 408, 417, 431…).
    if (this.#at('/components/schemas/Error') === undefined) {
      throw new Error('the document has no components.schemas.Error, the body of answers that reach no operation')
    }
    this.#basePath = basePathOf(this.#document)
    this.#operations = this.#findOperations()
  }

  /** Which operation a request reaches, by method and path; HEAD reaches GET's (RFC 9110 §9.3.2). */
  #operationFor (method: string, url: string): Operation | undefined {
    const path = pathOf(url)
    if (path === undefined) return undefined
    if (path !== this.#basePath && !path.startsWith(`${this.#basePath}/`)) return undefined
    const below = path.slice(this.#basePath.length)
    const wanted = method === 'HEAD' ? 'GET' : method
    // "Concrete (non-templated) paths are matched before their templated
    // counterparts" (OpenAPI 3.1, Paths Object): GET /keys/lookup is the
    // concrete path's, which has POST alone, not GET /keys/{id}'s.
    const matching = this.#operations.filter((o) => o.pattern.test(below))
    const concrete = matching.filter((o) => !o.templated)
    return (concrete.length > 0 ? concrete : matching).find((o) => o.method === wanted)
  }

  check (request: CheckedRequest, response: ReceivedResponse): CheckResult {
    const operation = this.#operationFor(request.method, request.url)
    const problems: string[] = []
    const headers = new Map<string, string>()
    for (const [name, value] of response.headers) headers.set(name.toLowerCase(), value)
    const where = `${request.method} ${clip(request.url, 120)} → ${response.status}`
    const bodyless = request.method === 'HEAD' || response.status === 204 || response.status === 304

    if (operation === undefined) {
      this.#checkUnmatched(response, headers, bodyless, where, problems)
      return { operation: undefined, problems }
    }

    const responses = `${operation.pointer}/responses`
    const documented = this.#responseFor(responses, response.status)
    if (documented === undefined) {
      problems.push(`${where}: status ${response.status} is not documented for ${operation.id}`)
      return { operation: operation.id, problems }
    }
    this.#checkHeaders(documented, headers, where, problems)
    if (!bodyless) this.#checkBody(documented, headers, response.body, where, problems)
    else if (response.body !== '') problems.push(`${where}: a ${request.method} answer has a body`)
    return { operation: operation.id, problems }
  }

  /**
   * An event's body, as a receiver got it, against the request body of the
   * document's webhook of that type (`webhooks`, OpenAPI 3.1): what is wrong, or nothing.
   */
  checkEvent (type: string, body: string): string[] {
    const problems: string[] = []
    const item = this.#follow(`/webhooks/${escapePointer(type)}`)
    const schema = item === undefined ? undefined : `${item}/post/requestBody/content/application~1json/schema`
    if (schema === undefined || this.#at(schema) === undefined) return [`the document has no webhook ${type} with a JSON body`]
    this.#validateBody(`${DOCUMENT_ID}#${schema}`, body, `webhook ${type}`, problems)
    return problems
  }

  #checkUnmatched (response: ReceivedResponse, headers: Map<string, string>, bodyless: boolean, where: string, problems: string[]): void {
    if (response.status < 400 || response.status > 599) {
      problems.push(`${where}: a request that reaches no operation got ${response.status}, not an error`)
      return
    }
    for (const [name, value] of headers) {
      if (TRANSPORT_HEADERS.has(name) || UNMATCHED_HEADERS.has(name)) continue
      const pointer = this.#knownHeaders.get(name)
      if (pointer === undefined) {
        problems.push(`${where}: header ${name} is documented nowhere in the document`)
        continue
      }
      this.#checkHeaderValue(pointer, name, value, where, problems)
    }
    if (bodyless) return
    const contentType = headers.get('content-type')
    if (contentType === undefined || mediaType(contentType) !== 'application/json') {
      problems.push(`${where}: an error without Content-Type: application/json (${contentType ?? 'none'})`)
      return
    }
    // The response of this status that some operation documents, else the Error schema.
    const documented = this.#operations
      .map((o) => this.#responseFor(`${o.pointer}/responses`, response.status, false))
      .find((pointer) => pointer !== undefined && this.#at(`${pointer}/content/application~1json/schema`) !== undefined)
    const schema = documented !== undefined
      ? `${DOCUMENT_ID}#${documented}/content/application~1json/schema`
      : `${DOCUMENT_ID}#/components/schemas/Error`
    this.#validateBody(schema, response.body, where, problems)
  }

  /** Pointer to the Response Object for `status`: the exact code, then `4XX`, then `default`. */
  #responseFor (responses: string, status: number, fallback = true): string | undefined {
    const candidates = [String(status), ...(fallback ? [`${String(status).charAt(0)}XX`, 'default'] : [])]
    for (const code of candidates) {
      const pointer = this.#follow(`${responses}/${code}`)
      if (pointer !== undefined) return pointer
    }
    return undefined
  }

  #checkHeaders (response: string, headers: Map<string, string>, where: string, problems: string[]): void {
    const documented = new Map<string, string>()
    const declared = this.#at(`${response}/headers`)
    if (isRecord(declared)) {
      for (const name of Object.keys(declared)) {
        const pointer = this.#follow(`${response}/headers/${escapePointer(name)}`)
        if (pointer !== undefined) documented.set(name.toLowerCase(), pointer)
      }
    }
    for (const [name, pointer] of documented) {
      const header = this.#at(pointer)
      if (isRecord(header) && header.required === true && !headers.has(name)) {
        problems.push(`${where}: required header ${name} is missing`)
      }
    }
    for (const [name, value] of headers) {
      if (TRANSPORT_HEADERS.has(name)) continue
      const pointer = documented.get(name)
      if (pointer === undefined) {
        problems.push(`${where}: header ${name} (${clip(value, 80)}) is not documented for this response`)
        continue
      }
      this.#checkHeaderValue(pointer, name, value, where, problems)
    }
  }

  /** A header's value fits its schema: as an integer when the schema says so, else as the string sent. */
  #checkHeaderValue (headerPointer: string, name: string, value: string, where: string, problems: string[]): void {
    const schemaPointer = `${headerPointer}/schema`
    if (this.#at(schemaPointer) === undefined) return
    const types = this.#typesOf(schemaPointer)
    let candidate: unknown = value
    if ((types.has('integer') || types.has('number')) && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(value)) {
      candidate = this.#numberOf(value)
    }
    const validate = this.#validator(`${DOCUMENT_ID}#${schemaPointer}`)
    if (!validate(candidate)) {
      problems.push(`${where}: header ${name}: ${JSON.stringify(clip(value, 120))} ${describeErrors(validate)}`)
    }
  }

  #checkBody (response: string, headers: Map<string, string>, body: string, where: string, problems: string[]): void {
    const content = this.#at(`${response}/content`)
    const contentType = headers.get('content-type')
    if (!isRecord(content) || Object.keys(content).length === 0) {
      if (body !== '') problems.push(`${where}: the response documents no body, but one was sent`)
      return
    }
    if (contentType === undefined) {
      problems.push(`${where}: no Content-Type; documented: ${Object.keys(content).join(', ')}`)
      return
    }
    const type = mediaType(contentType)
    if (!(type in content)) {
      problems.push(`${where}: Content-Type ${contentType} is not documented (${Object.keys(content).join(', ')})`)
      return
    }
    const schemaPointer = `${response}/content/${escapePointer(type)}/schema`
    if (this.#at(schemaPointer) === undefined) return
    if (type !== 'application/json' && !type.endsWith('+json')) return
    this.#validateBody(`${DOCUMENT_ID}#${schemaPointer}`, body, where, problems)
  }

  #validateBody (schemaRef: string, body: string, where: string, problems: string[]): void {
    let value: unknown
    try {
      value = this.#toValidatable(parse(body))
    } catch (error) {
      problems.push(`${where}: the body is not JSON (${(error as Error).message}): ${JSON.stringify(clip(body))}`)
      return
    }
    const validate = this.#validator(schemaRef)
    if (!validate(value)) problems.push(`${where}: body ${describeErrors(validate)}: ${clip(body)}`)
  }

  #validator (ref: string): ValidateFunction {
    let validate = this.#validators.get(ref)
    if (validate === undefined) {
      validate = this.#ajv.compile({ $ref: ref })
      this.#validators.set(ref, validate)
    }
    return validate
  }

  #numberOf (literal: string): number {
    const integer = exactInteger(literal)
    return integer === undefined ? Number(literal) : this.#numbers.standIn(integer)
  }

  /** Decoded JSON with each number as a double, big integers as their stand-ins. */
  #toValidatable (node: unknown): Json {
    if (isLosslessNumber(node)) return this.#numberOf(node.value)
    if (Array.isArray(node)) return node.map((item) => this.#toValidatable(item))
    if (isRecord(node)) {
      const copy: Record<string, Json> = {}
      for (const [key, value] of Object.entries(node)) {
        if (key === 'multipleOf' && isLosslessNumber(value) && !isSafe(exactInteger(value.value) ?? 0n)) {
          throw new Error('multipleOf on integers past 2^53 cannot be checked with stand-ins')
        }
        copy[key] = this.#toValidatable(value)
      }
      return copy
    }
    return node as Json
  }

  /** The value at a JSON pointer of the document. */
  #at (pointer: string): unknown {
    let node: unknown = this.#document
    for (const token of pointer.split('/').slice(1)) {
      if (Array.isArray(node)) node = node[Number(token)]
      else if (isRecord(node)) node = node[unescapePointer(token)]
      else return undefined
      if (node === undefined) return undefined
    }
    return node
  }

  /** Follows Reference Objects from `pointer` to the object itself; undefined when nothing is there. */
  #follow (pointer: string): string | undefined {
    let current = pointer
    for (let hops = 0; hops < 20; hops++) {
      const node = this.#at(current)
      if (node === undefined) return undefined
      if (!isRecord(node) || typeof node.$ref !== 'string') return current
      if (!node.$ref.startsWith('#/')) throw new Error(`only references within the document are supported: ${node.$ref}`)
      current = node.$ref.slice(1)
    }
    throw new Error(`a cycle of references from ${pointer}`)
  }

  /** The `type`s a schema allows, through `$ref`s and `allOf`/`anyOf`/`oneOf`. */
  #typesOf (pointer: string, depth = 0): Set<string> {
    const types = new Set<string>()
    const schema = this.#at(pointer)
    if (!isRecord(schema) || depth > 20) return types
    if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/')) {
      for (const type of this.#typesOf(schema.$ref.slice(1), depth + 1)) types.add(type)
    }
    if (typeof schema.type === 'string') types.add(schema.type)
    if (Array.isArray(schema.type)) for (const type of schema.type) if (typeof type === 'string') types.add(type)
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
      const list = schema[keyword]
      if (Array.isArray(list)) {
        list.forEach((_, index) => { for (const type of this.#typesOf(`${pointer}/${keyword}/${index}`, depth + 1)) types.add(type) })
      }
    }
    return types
  }

  #findOperations (): Operation[] {
    const operations: Operation[] = []
    const paths = this.#at('/paths')
    if (!isRecord(paths)) return operations
    for (const [path, item] of Object.entries(paths)) {
      const itemPointer = this.#follow(`/paths/${escapePointer(path)}`)
      if (itemPointer === undefined || !isRecord(item)) continue
      const pattern = new RegExp(`^${path.split(/\{[^}]+\}/).map(escapeRegExp).join('[^/]+')}$`)
      for (const method of ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']) {
        const operation = this.#at(`${itemPointer}/${method}`)
        if (!isRecord(operation)) continue
        const pointer = `${itemPointer}/${method}`
        operations.push({ id: String(operation.operationId ?? `${method} ${path}`), method: method.toUpperCase(), pattern, templated: path.includes('{'), pointer })
        this.#collectHeaders(`${pointer}/responses`)
      }
    }
    return operations
  }

  #collectHeaders (responses: string): void {
    const list = this.#at(responses)
    if (!isRecord(list)) return
    for (const code of Object.keys(list)) {
      const response = this.#follow(`${responses}/${escapePointer(code)}`)
      if (response === undefined) continue
      const headers = this.#at(`${response}/headers`)
      if (!isRecord(headers)) continue
      for (const name of Object.keys(headers)) {
        const pointer = this.#follow(`${response}/headers/${escapePointer(name)}`)
        if (pointer !== undefined && !this.#knownHeaders.has(name.toLowerCase())) this.#knownHeaders.set(name.toLowerCase(), pointer)
      }
    }
  }
}

function escapeRegExp (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

function mediaType (contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase()
}

/** The path of the first server's URL: what every path of the document is relative to. */
function basePathOf (document: Json): string {
  const servers = isRecord(document) ? document.servers : undefined
  const first = Array.isArray(servers) ? servers[0] : undefined
  const url = isRecord(first) && typeof first.url === 'string' ? first.url : '/'
  return new URL(url, 'http://server.invalid').pathname.replace(/\/$/, '')
}

/** The decoded path of a request target, as the router sees it; undefined when it cannot be decoded. */
function pathOf (url: string): string | undefined {
  let target = url
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    try {
      target = new URL(target).pathname
    } catch {
      return undefined
    }
  }
  // A fragment is never the server's, and routers drop it as they drop the query.
  const path = target.split(/[?#]/)[0] ?? ''
  try {
    return path.split('/').map((segment) => decodeURIComponent(segment).replace(/\//g, '%2F')).join('/')
  } catch {
    return undefined
  }
}

function describeErrors (validate: ValidateFunction): string {
  return (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath === '' ? '' : `${e.instancePath} `}${e.message ?? e.keyword}`).join('; ')
}

/** An admin request through `inject`, from 127.0.0.1, its answer asserted to be as the admin document describes it. */
export async function injectChecked (
  app: { inject: (options: InjectOptions) => Promise<LightMyRequestResponse> }, checker: OpenApiChecker, options: InjectOptions & { url: string }
): Promise<LightMyRequestResponse> {
  const response = await app.inject({ remoteAddress: '127.0.0.1', ...options })
  const method = options.method ?? 'GET'
  const { problems } = checker.check({ method, url: options.url }, receivedOf(response))
  assert.deepEqual(problems, [], `the admin document does not describe ${method} ${options.url} → ${response.statusCode}`)
  return response
}
