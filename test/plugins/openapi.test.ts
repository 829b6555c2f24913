// The OpenAPI document (docs/API.md: The OpenAPI document and the docs page):
// its shape, what it says about headers, errors and bounds, that it matches
// what the service sends, and that it passes `redocly lint` and Spectral
// with the OWASP ruleset. And the docs page, whose every asset is served
// from here.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { INT64_MAX, buildPet } from '../support/fixtures.js'
import { runTool, spectralOwaspErrors } from '../support/lint-tools.js'
import { keyListFile, makeScanner, report } from '../support/scanner.js'

const PRODUCTION = 'https://api.petstore.example/v1'
const STAGING = 'https://staging.petstore.example/v1'
const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
const DEPRECATION_HEADERS = ['Deprecation', 'Sunset', 'Link']
/** The operations outside the gate, which take no API key (docs/API.md: Leaked tokens). */
const KEYLESS = ['reportLeakedTokens', 'revokeCredentials']
/** Transport headers that the document need not describe. */
const TRANSPORT_HEADERS = new Set([
  'content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary',
  'access-control-expose-headers', 'access-control-allow-credentials'
])

interface Schema {
  type?: string | string[]
  format?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  maxLength?: number
  pattern?: string
  maxItems?: number
  enum?: unknown[]
  const?: unknown
}

interface ResponseObject {
  description: string
  headers?: Record<string, { schema: Schema, description?: string }>
  content?: Record<string, { schema: Schema }>
}

interface Operation {
  operationId: string
  deprecated?: boolean
  security?: unknown[]
  responses: Record<string, ResponseObject>
}

interface OpenApiDocument {
  openapi: string
  servers: Array<{ url: string, description?: string, 'x-internal'?: boolean }>
  paths: Record<string, Record<string, Operation>>
  components: {
    schemas: Record<string, Schema>
    headers: Record<string, { schema: Schema, description?: string }>
    parameters: Record<string, { name: string, in: string, required?: boolean, schema: Schema }>
    responses: Record<string, ResponseObject>
  }
}

/** The node a local `$ref` (`#/components/…`) points to. */
function target (document: unknown, ref: string): unknown {
  assert.match(ref, /^#\//, `${ref} is not a local reference`)
  let node = document
  for (const token of ref.slice(2).split('/')) {
    node = (node as Record<string, unknown>)[token.replace(/~1/g, '/').replace(/~0/g, '~')]
    assert.ok(node !== undefined, `${ref} points to nothing`)
  }
  return node
}

/** The document with every `$ref` replaced by what it points to, as the checks of what it says read it. */
function dereference<T> (node: T, document: unknown = node): T {
  if (Array.isArray(node)) return node.map((item: unknown) => dereference(item, document)) as T
  if (typeof node !== 'object' || node === null) return node
  const { $ref, ...rest } = node as Record<string, unknown>
  if (typeof $ref === 'string') return dereference({ ...(target(document, $ref) as object), ...rest } as T, document)
  return Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, dereference(value, document)])) as T
}

function operations (document: OpenApiDocument): Map<string, Operation> {
  const found = new Map<string, Operation>()
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) found.set(operation.operationId, operation)
  }
  return found
}

function operation (document: OpenApiDocument, operationId: string): Operation {
  const found = operations(document).get(operationId)
  assert.ok(found, `no operation ${operationId}`)
  return found
}

/** Every schema in the document, with where it is. */
function * schemas (node: unknown, path = '#'): Generator<[string, Schema]> {
  if (typeof node !== 'object' || node === null) return
  if (!Array.isArray(node) && 'type' in node && typeof (node as Schema).type === 'string') yield [path, node as Schema]
  for (const [key, value] of Object.entries(node)) yield * schemas(value, `${path}/${key}`)
}

/** Whether an operation needs no API key: one of its security requirements is the empty one, anonymous access. */
function keyless (op: Operation): boolean {
  return op.security?.some((requirement) => isDeepStrictEqual(requirement, {})) === true
}

/** The codes a response's Error body is narrowed to. */
function codesOf (response: ResponseObject | undefined): unknown {
  const narrowed = response?.content?.['application/json']?.schema as { allOf?: Array<{ properties?: { code?: Schema } }> } | undefined
  return narrowed?.allOf?.[1]?.properties?.code?.enum
}

/** A header's value is what its documented schema allows. */
function assertFits (schema: Schema, value: string, where: string): void {
  if (schema.type === 'integer') {
    assert.match(value, /^\d+$/, `${where}: ${value} is not an integer`)
    assert.ok(schema.minimum !== undefined && schema.maximum !== undefined && Number(value) >= schema.minimum && Number(value) <= schema.maximum,
      `${where}: ${value} is out of bounds`)
    return
  }
  if (schema.maxLength !== undefined) assert.ok([...value].length <= schema.maxLength, `${where}: too long`)
  if (schema.pattern !== undefined) assert.match(value, new RegExp(schema.pattern, 'u'), `${where}: ${value}`)
  if (schema.enum !== undefined) assert.ok(schema.enum.includes(value), `${where}: ${value} is not one of ${schema.enum.join(', ')}`)
  if (schema.format === 'uuid') assert.match(value, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, `${where}: ${value}`)
}

describe('the OpenAPI document', () => {
  let subject: TestApp
  let text: string
  /** As served, with its references. */
  let served: OpenApiDocument
  /** With every reference replaced by what it points to. */
  let document: OpenApiDocument
  let dir: string
  const scanner = makeScanner()

  before(async () => {
    subject = await buildTestApp({ PUBLIC_BASE_URL: PRODUCTION, STAGING_BASE_URL: STAGING, SECRET_SCANNING_KEYS_URL: keyListFile(scanner) })
    const response = await subject.app.inject({ url: '/v1/openapi.json' })
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    text = response.body
    served = JSON.parse(text) as OpenApiDocument
    document = dereference(served)
    dir = await mkdtemp(join(tmpdir(), 'petstore-openapi-'))
  })

  after(async () => {
    await subject.close()
    await rm(dir, { recursive: true, force: true })
  })

  test('is OpenAPI 3.1 with both environments, the three operations on animals, getRateLimit and the two on leaked tokens', () => {
    assert.match(document.openapi, /^3\.1\.\d+$/)
    assert.deepEqual(document.servers.map((s) => s.url), [PRODUCTION, STAGING])
    assert.deepEqual([...operations(document).keys()].sort(), ['createPet', 'getPet', 'getRateLimit', 'listPets', 'reportLeakedTokens', 'revokeCredentials'])
    assert.equal(operation(document, 'getPet').deprecated, true)
    assert.notEqual(operation(document, 'listPets').deprecated, true)
    assert.notEqual(operation(document, 'createPet').deprecated, true)
  })

  test('writes the int64 bounds exactly, never as a rounded double', () => {
    assert.match(text, new RegExp(`"maximum":${INT64_MAX}[,}]`))
    assert.doesNotMatch(text, /922337203685477580[89]|9\.22\d*e\+?18/i)
  })

  test('gives every response the rate-limit headers, and every 429 Retry-After', () => {
    for (const [id, op] of operations(document)) {
      for (const [status, response] of Object.entries(op.responses)) {
        for (const header of RATE_LIMIT_HEADERS) {
          assert.ok(response.headers?.[header], `${id} ${status} lacks ${header}`)
        }
      }
      for (const status of keyless(op) ? ['429', '500'] : ['401', '429', '500']) assert.ok(op.responses[status], `${id} lacks ${status}`)
      assert.ok(op.responses['429']?.headers?.['Retry-After'], `${id} 429 lacks Retry-After`)
    }
  })

  test('When a request may be shed under overload, then every operation behind the gate documents its 503 with the code overloaded beside service_unavailable, and Retry-After', () => {
    for (const [id, op] of operations(document)) {
      if (keyless(op)) continue
      // Assert
      const unavailable = op.responses['503']
      assert.ok(unavailable?.headers?.['Retry-After'], `${id} 503 lacks Retry-After`)
      assert.deepEqual(codesOf(unavailable), ['service_unavailable', 'overloaded'], id)
    }
  })

  test('When an operation needs no API key, then it says so, and documents its own refusals and none of a key\'s', () => {
    // Arrange
    const ops = operations(document)
    const report = operation(document, 'reportLeakedTokens').responses
    const revoke = operation(document, 'revokeCredentials').responses

    // Assert
    assert.deepEqual([...ops].filter(([, op]) => keyless(op)).map(([id]) => id).sort(), KEYLESS)
    for (const id of KEYLESS) assert.deepEqual(operation(document, id).security, [{}], id)
    assert.deepEqual(Object.keys(report).sort(), ['200', '400', '401', '413', '415', '417', '429', '500', '503'])
    assert.deepEqual(Object.keys(revoke).sort(), ['202', '400', '413', '415', '417', '429', '500'])
    // A refused signature: no bearer challenge, no key's code.
    assert.deepEqual(codesOf(report['401']), ['invalid_signature'])
    assert.equal(report['401']?.headers?.['WWW-Authenticate'], undefined)
    // Limited per address: never banned nor capped as a key is; not shed.
    for (const responses of [report, revoke]) assert.deepEqual(codesOf(responses['429']), ['rate_limited'])
    assert.deepEqual(codesOf(report['503']), ['service_unavailable'])
    assert.ok(report['503']?.headers?.['Retry-After'])
    // Neither header is in the request's parameters as required: without them a report gets its 401, not a 400.
    const parameters = (operation(served, 'reportLeakedTokens') as unknown as { parameters: Array<{ name?: string, required?: boolean }> }).parameters
    assert.deepEqual(parameters.filter((p) => p.name !== undefined).map((p) => [p.name, p.required]),
      [['github-public-key-identifier', false], ['github-public-key-signature', false]])
    // And no operation behind the gate says it checks a signature.
    for (const [id, op] of ops) {
      if (keyless(op)) continue
      assert.deepEqual(codesOf(op.responses['401']), ['missing_api_key', 'invalid_api_key'], id)
      assert.ok(op.responses['401']?.headers?.['WWW-Authenticate'], `${id} 401 lacks WWW-Authenticate`)
    }
  })

  test('gives the other headers each operation sends', () => {
    assert.ok(operation(document, 'listPets').responses['200']?.headers?.Link)
    assert.ok(operation(document, 'createPet').responses['201']?.headers?.['Idempotent-Replayed'])
    for (const [status, response] of Object.entries(operation(document, 'getPet').responses)) {
      for (const header of DEPRECATION_HEADERS) assert.ok(response.headers?.[header], `getPet ${status} lacks ${header}`)
    }
    assert.ok(operation(document, 'getPet').responses['404'])
    assert.ok(operation(document, 'getPet').responses['410'])
  })

  test('bounds every integer, string and array', () => {
    for (const [path, schema] of schemas(document)) {
      if (schema.type === 'integer') {
        assert.ok(schema.minimum !== undefined || schema.exclusiveMinimum !== undefined, `${path}: no minimum`)
        assert.ok(schema.maximum !== undefined || schema.exclusiveMaximum !== undefined, `${path}: no maximum`)
        assert.ok(schema.format === 'int32' || schema.format === 'int64', `${path}: no int32/int64 format`)
      }
      if (schema.type === 'string') {
        assert.ok(schema.maxLength !== undefined || schema.enum !== undefined || schema.const !== undefined, `${path}: no maxLength`)
      }
      if (schema.type === 'array') assert.ok(schema.maxItems !== undefined, `${path}: no maxItems`)
    }
  })

  test('describes every header the service really sends', async () => {
    const { app } = subject
    const key = await subject.newKey()
    const leaked = await subject.newKey()
    const signed = report([leaked])
    const scan = (body: string, headers: Record<string, string>): Promise<LightMyRequestResponse> =>
      app.inject({ method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json', ...headers }, payload: body })
    const revoke = (payload: string): Promise<LightMyRequestResponse> =>
      app.inject({ method: 'POST', url: '/v1/credentials/revoke', headers: { 'content-type': 'application/json' }, payload, remoteAddress: '192.0.2.7' })
    const tight = await subject.newKey('enterprise', { perMinute: 1, perDay: 10 })
    const create = (): Promise<LightMyRequestResponse> =>
      app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(key), payload: JSON.stringify(buildPet()) })
    const created = await create()
    await create()
    const id = (created.json() as { id: number }).id
    const cases: Array<[string, LightMyRequestResponse]> = [
      ['createPet', created],
      ['createPet', await app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(key), payload: '{"name":""}' })],
      ['listPets', await app.inject({ url: '/v1/pets?limit=1', headers: jsonHeaders(key) })],
      ['listPets', await app.inject({ url: '/v1/pets' })],
      ['getPet', await app.inject({ url: `/v1/pets/${id}`, headers: jsonHeaders(key) })],
      ['getPet', await app.inject({ url: '/v1/pets/999999', headers: jsonHeaders(key) })],
      ['listPets', await app.inject({ url: '/v1/pets', headers: jsonHeaders(tight) })],
      ['listPets', await app.inject({ url: '/v1/pets', headers: jsonHeaders(tight) })],
      ['reportLeakedTokens', await scan(signed, scanner.sign(signed))],
      ['reportLeakedTokens', await scan(signed, {})],
      ['reportLeakedTokens', await scan('{}', scanner.sign('{}'))],
      ['reportLeakedTokens', await scan('[', scanner.sign('['))],
      ['reportLeakedTokens', await scan('x'.repeat(1024 * 1024 + 1), scanner.sign('x'))],
      ...await Promise.all(Array.from({ length: 11 }, async () => ['revokeCredentials', await revoke('{"credentials":["pet_live_x"]}')] as [string, LightMyRequestResponse])),
      ['revokeCredentials', await revoke('{"credentials":[]}')]
    ]
    const seen = new Set<number>()
    for (const [operationId, response] of cases) {
      seen.add(response.statusCode)
      const documented = operation(document, operationId).responses[String(response.statusCode)]
      assert.ok(documented, `${operationId} ${response.statusCode} is not documented`)
      const headers = new Map(Object.entries(documented.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header.schema]))
      for (const [name, value] of Object.entries(response.headers)) {
        if (TRANSPORT_HEADERS.has(name)) continue
        const schema = headers.get(name)
        assert.ok(schema, `${operationId} ${response.statusCode} sends ${name}, undocumented`)
        assertFits(schema, String(value), `${operationId} ${response.statusCode} ${name}`)
      }
      for (const name of RATE_LIMIT_HEADERS) assert.ok(response.headers[name.toLowerCase()] !== undefined, `${operationId} ${response.statusCode} lacks ${name}`)
    }
    assert.deepEqual([...seen].sort(), [200, 201, 202, 400, 401, 404, 413, 429])
  })

  test('When a generator reads it, then Pet, NewPet, Pets, PetStatus, RateLimitStatus, the leaks\' bodies and Error are components that every body refers to', () => {
    // Arrange
    const ref = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` })
    const body = (op: string, status: string): unknown => {
      const response = operation(served, op).responses[status]
      const resolved = (response !== undefined && '$ref' in response ? target(served, String(response.$ref)) : response) as ResponseObject
      return resolved.content?.['application/json']?.schema
    }
    const requestBody = (path: string): unknown =>
      (served.paths[path]?.post as unknown as { requestBody: { content: Record<string, { schema: unknown }> } }).requestBody.content['application/json']?.schema

    // Act
    const names = Object.keys(served.components.schemas).sort()

    // Assert
    assert.deepEqual(names, ['CredentialsRevocation', 'Error', 'NewPet', 'Pet', 'PetCreatedEvent', 'PetStatus', 'Pets', 'RateLimitStatus', 'RevocationAccepted', 'ScanLabels', 'ScanReport', 'WebhookTestData', 'WebhookTestEvent', 'WindowStanding'])
    assert.deepEqual(body('getRateLimit', '200'), ref('RateLimitStatus'))
    assert.deepEqual(requestBody('/pets'), ref('NewPet'))
    assert.deepEqual(requestBody('/secret-scanning'), ref('ScanReport'))
    assert.deepEqual(body('reportLeakedTokens', '200'), ref('ScanLabels'))
    assert.deepEqual(requestBody('/credentials/revoke'), ref('CredentialsRevocation'))
    assert.deepEqual(body('revokeCredentials', '202'), ref('RevocationAccepted'))
    assert.deepEqual(body('createPet', '201'), ref('Pet'))
    assert.deepEqual(body('getPet', '200'), ref('Pet'))
    assert.deepEqual(body('listPets', '200'), ref('Pets'))
    assert.deepEqual((served.components.schemas.Pets as { items: unknown }).items, ref('Pet'))
    assert.deepEqual((served.components.schemas.Pet as { properties: { status: unknown } }).properties.status, ref('PetStatus'))
    for (const [op, status] of [['listPets', '400'], ['createPet', '422'], ['getPet', '404'], ['reportLeakedTokens', '401'], ['revokeCredentials', '429']] as const) {
      assert.deepEqual((body(op, status) as { allOf: unknown[] }).allOf[0], ref('Error'), `${op} ${status}`)
    }
    // Each is written once: nowhere else does a schema carry their titles.
    assert.equal(text.match(/"title":"Pet"/g)?.length, 1)
    assert.equal(text.match(/"title":"NewPet"/g)?.length, 1)
    assert.equal(text.match(/"Machine-readable error code\."/g)?.length, 1)
  })

  test('When its webhooks are read, then pet.created and webhook.test are POSTs with the three signature headers, their event as a named body whose data is the Pet or the test, no API key, and 2XX as success', () => {
    // Arrange
    interface Webhook { post: { security: unknown[], parameters: Array<{ $ref: string }>, requestBody: { required: boolean, content: Record<string, { schema: unknown }> }, responses: Record<string, { description: string }> } }
    const webhooks = (served as unknown as { webhooks: Record<string, Webhook> }).webhooks
    const dataOf = (name: string): unknown => (served.components.schemas[name] as { properties: { data: unknown } }).properties.data

    // Act
    const types = Object.keys(webhooks).sort()

    // Assert: the key and quota events are the operators' (the admin document's), their data the admin API's Key.
    assert.deepEqual(types, ['pet.created', 'webhook.test'])
    for (const [type, name] of [['pet.created', 'PetCreatedEvent'], ['webhook.test', 'WebhookTestEvent']] as const) {
      const post = webhooks[type]?.post
      assert.ok(post, type)
      assert.deepEqual(post.parameters.map((p) => p.$ref), ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => `#/components/parameters/${h}`), type)
      assert.deepEqual(post.requestBody.content['application/json']?.schema, { $ref: `#/components/schemas/${name}` })
      assert.equal(post.requestBody.required, true)
      assert.deepEqual(post.security, [])
      assert.deepEqual(Object.keys(post.responses).sort(), ['2XX', 'default'])
      assert.match(post.responses['default']?.description ?? '', /retried/)
    }
    assert.deepEqual(dataOf('PetCreatedEvent'), { $ref: '#/components/schemas/Pet' })
    assert.deepEqual(dataOf('WebhookTestEvent'), { $ref: '#/components/schemas/WebhookTestData' })
    for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      assert.deepEqual(served.components.parameters[header] && [served.components.parameters[header].in, served.components.parameters[header].required], ['header', true], header)
    }
  })

  test('When a response carries a header, then it refers to that header under components.headers', () => {
    // Arrange
    const seen: string[] = []

    // Act
    for (const [id, op] of operations(served)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const resolved = ('$ref' in response ? target(served, String(response.$ref)) : response) as ResponseObject
        for (const [name, header] of Object.entries(resolved.headers ?? {})) {
          seen.push(name)
          // Assert
          assert.match(String((header as { $ref?: string }).$ref), /^#\/components\/headers\//, `${id} ${status} ${name} is written in place`)
        }
      }
    }
    assert.ok(seen.includes('X-RateLimit-Limit') && seen.includes('Retry-After') && seen.includes('Deprecation'))
  })

  test('When several operations give the same error response, then it is written once under components.responses', () => {
    // Act
    const listing = operation(served, 'listPets').responses
    const creating = operation(served, 'createPet').responses

    // Assert
    for (const [status, name] of [['400', 'BadRequest'], ['401', 'Unauthorized'], ['417', 'ExpectationFailed'], ['429', 'TooManyRequests'], ['500', 'InternalServerError'], ['503', 'ServiceUnavailable']]) {
      assert.deepEqual(listing[status as string], { $ref: `#/components/responses/${name}` })
      assert.deepEqual(creating[status as string], { $ref: `#/components/responses/${name}` })
    }
    // The two keyless operations share theirs too: with each other, and with the API's where they are the same.
    const reporting = operation(served, 'reportLeakedTokens').responses
    const revoking = operation(served, 'revokeCredentials').responses
    for (const [status, name] of [['400', 'BadRequest'], ['413', 'PayloadTooLarge'], ['415', 'UnsupportedMediaType'], ['417', 'ExpectationFailed'], ['429', 'TooManyRequests2'], ['500', 'InternalServerError']]) {
      assert.deepEqual(reporting[status as string], { $ref: `#/components/responses/${name}` })
      assert.deepEqual(revoking[status as string], { $ref: `#/components/responses/${name}` })
    }
    assert.deepEqual(Object.keys(served.components.responses).sort(), [
      'BadRequest', 'ExpectationFailed', 'Forbidden', 'InternalServerError', 'PayloadTooLarge', 'ServiceUnavailable', 'TooManyRequests', 'TooManyRequests2', 'Unauthorized', 'UnsupportedMediaType'
    ])
  })

  test('When an operation is called with X-Request-Id, then the document says it takes 1 to 128 visible ASCII characters and echoes them', () => {
    // Arrange
    const parameter = served.components.parameters['X-Request-Id']
    const header = served.components.headers['X-Request-Id']
    const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('')

    // Assert
    assert.ok(parameter !== undefined && header !== undefined)
    assert.deepEqual([parameter.name, parameter.in, parameter.required], ['X-Request-Id', 'header', false])
    for (const schema of [parameter.schema, header.schema]) {
      assert.equal(schema.format, undefined)
      const rule = new RegExp(schema.pattern ?? '', 'u')
      assert.match(visible, rule)
      assert.match('x'.repeat(128), rule)
      assert.match('0f8fad5b-d9cb-469f-a165-70867728950e', rule)
      for (const refused of ['', 'x'.repeat(129), 'a b', 'caf\u00e9', 'tab\there', '\u007f']) assert.doesNotMatch(refused, rule)
    }
    for (const [id, op] of operations(served)) {
      const parameters = (op as unknown as { parameters: unknown[] }).parameters
      assert.ok(parameters.some((p) => isDeepStrictEqual(p, { $ref: '#/components/parameters/X-Request-Id' })), `${id} lacks X-Request-Id`)
    }
  })

  test('passes redocly lint (recommended) with no errors', async () => {
    await writeFile(join(dir, 'openapi.json'), text)
    await writeFile(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n')
    const result = await runTool('redocly',
      ['lint', 'openapi.json', '--config', 'redocly.yaml', '--format', 'json'], dir)
    const report = JSON.parse(result.stdout) as { totals: { errors: number }, problems: Array<{ severity: string, ruleId: string, message: string }> }
    const errors = report.problems.filter((p) => p.severity === 'error')
    assert.deepEqual(errors, [], `redocly lint: ${result.stderr}`)
    assert.equal(report.totals.errors, 0)
    assert.equal(result.code, 0, result.stderr)
  })

  test('passes Spectral with the OWASP ruleset with no errors', async () => {
    await writeFile(join(dir, 'openapi.json'), text)
    const { errors, run: result } = await spectralOwaspErrors(dir)
    assert.deepEqual(errors, [], `spectral: ${result.stderr}`)
    assert.equal(result.code, 0, result.stderr)
  })
})

test('a CORS response carries the Access-Control-Allow-Origin the document describes', async () => {
  const origin = 'https://shop.petstore.example'
  const subject = await buildTestApp({ PUBLIC_BASE_URL: PRODUCTION, CORS_ORIGINS: origin })
  try {
    const response = await subject.app.inject({ url: '/v1/pets', headers: { origin } })
    assert.equal(response.statusCode, 401)
    assert.equal(response.headers['access-control-allow-origin'], origin)
    const document = dereference(JSON.parse((await subject.app.inject({ url: '/v1/openapi.json' })).body) as OpenApiDocument)
    assert.ok(operation(document, 'listPets').responses['401']?.headers?.['Access-Control-Allow-Origin'])
  } finally {
    await subject.close()
  }
})

test('GET /v1/docs is a page whose every script and style is served here', async () => {
  const subject = await buildTestApp({ PUBLIC_BASE_URL: PRODUCTION, STAGING_BASE_URL: STAGING })
  try {
    const page = await subject.app.inject({ url: '/v1/docs' })
    assert.equal(page.statusCode, 200)
    assert.match(String(page.headers['content-type']), /^text\/html/)
    const assets = [
      ...page.body.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g),
      ...page.body.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"/g)
    ].map((match) => match[1] ?? '')
    assert.ok(assets.some((a) => a.endsWith('.js')), 'no script')
    assert.ok(assets.some((a) => a.endsWith('.css')), 'no stylesheet')
    const policy = String(page.headers['content-security-policy'] ?? '')
    assert.doesNotMatch(policy, /upgrade-insecure-requests/, 'the page must work over plain http')
    assert.doesNotMatch(policy, /https:|validator\.swagger\.io/, 'the page may load from elsewhere')
    assert.match(policy, /default-src 'self'/)
    const base = 'http://petstore.test/v1/docs'
    for (const asset of assets) {
      const url = new URL(asset, base)
      assert.equal(url.origin, new URL(base).origin, `${asset} is not served here`)
      const response = await subject.app.inject({ url: url.pathname + url.search })
      assert.equal(response.statusCode, 200, `${asset}: ${response.statusCode}`)
      assert.ok(response.rawPayload.length > 0, `${asset} is empty`)
    }
    // The page loads the document from beside itself: the same text as /v1/openapi.json.
    const spec = await subject.app.inject({ url: '/v1/docs/json' })
    assert.equal(spec.statusCode, 200)
    assert.equal(spec.body, (await subject.app.inject({ url: '/v1/openapi.json' })).body)
    const yaml = await subject.app.inject({ url: '/v1/docs/yaml' })
    assert.equal(yaml.statusCode, 200)
    assert.match(String(yaml.headers['content-type']), /yaml/)
    assert.match(yaml.body, /^openapi: 3\.1\.\d+$/m)
    assert.match(yaml.body, new RegExp(`^ +maximum: ${INT64_MAX}$`, 'm'))
  } finally {
    await subject.close()
  }
})

test('When a staging instance has no STAGING_BASE_URL, then the document lists its own address as the staging server', async () => {
  const subject = await buildTestApp({ PETSTORE_ENV: 'staging', PUBLIC_BASE_URL: PRODUCTION, PORT: '9100' })
  try {
    const document = (await subject.app.inject({ url: '/v1/openapi.json' })).json() as OpenApiDocument
    assert.deepEqual(document.servers.map((s) => [s.url, s.description]), [[PRODUCTION, 'Production'], ['http://127.0.0.1:9100/v1', 'Staging']])
  } finally {
    await subject.close()
  }
})
