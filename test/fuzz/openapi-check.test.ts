// The OpenAPI checker (test/support/openapi-check.ts) itself: that it finds
// what it is there to find, that it compares int64 values exactly, and that
// it reads a document whose schemas, headers and responses are components
// reached by `$ref` as it reads one that writes them out in place.
import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { ErrorBody } from '../../src/schemas/error.js'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { OpenApiChecker, exactInteger, type ReceivedResponse } from '../support/openapi-check.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

function received (response: LightMyRequestResponse): ReceivedResponse {
  return {
    status: response.statusCode,
    headers: Object.entries(response.headers).map(([name, value]): [string, string] => [name, String(value)]),
    body: response.body
  }
}

/** A response that the document describes, as listPets answers it. */
function listing (overrides: Partial<ReceivedResponse> = {}, extraHeaders: Array<[string, string]> = []): ReceivedResponse {
  return {
    status: 200,
    headers: [
      ['content-type', 'application/json; charset=utf-8'], ['x-ratelimit-limit', '60'], ['x-ratelimit-remaining', '59'],
      ['x-ratelimit-reset', '1804723200'], ['x-request-id', '3020d286-a3fa-45cb-b86d-12136752f5ae'], ...extraHeaders
    ],
    body: '[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]',
    ...overrides
  }
}

const isObject = (node: Json | undefined): node is { [key: string]: Json } => typeof node === 'object' && node !== null && !Array.isArray(node)

/**
 * The document as it is being reworked: Pet, NewPet, PetStatus and Error
 * as `components.schemas`, every header as a `components.headers` entry and
 * every response as a `components.responses` entry, each used by `$ref`,
 * some through a chain of two.
 */
function withComponents (document: { [key: string]: Json }): { [key: string]: Json } {
  const copy = structuredClone(document)
  // The Error body of every status, as the answers that reach no operation have it.
  const { $id: _, ...error } = JSON.parse(JSON.stringify(ErrorBody)) as { [key: string]: Json }
  const schemas: { [key: string]: Json } = { Error: error }
  const headers: { [key: string]: Json } = {}
  const responses: { [key: string]: Json } = {}
  const named = (store: { [key: string]: Json }, base: string, value: Json): string => {
    for (let n = 1; ; n++) {
      const name = n === 1 ? base : `${base}${n}`
      if (store[name] === undefined) store[name] = value
      if (isDeepStrictEqual(store[name], value)) return name
    }
  }
  const hoistSchemas = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(hoistSchemas)
    if (!isObject(node)) return node
    const inner: { [key: string]: Json } = {}
    for (const [key, value] of Object.entries(node)) inner[key] = hoistSchemas(value)
    if (inner.title === 'Pet' || inner.title === 'NewPet') return { $ref: `#/components/schemas/${named(schemas, String(inner.title), inner)}` }
    if (Array.isArray(inner.enum) && inner.enum.includes('sold')) {
      const { description, ...status } = inner
      return { $ref: `#/components/schemas/${named(schemas, 'PetStatus', status)}`, ...(description === undefined ? {} : { description }) }
    }
    if (isObject(inner.properties) && inner.properties.code !== undefined && inner.properties.message !== undefined) {
      return { $ref: `#/components/schemas/${named(schemas, 'Error', inner)}` }
    }
    return inner
  }
  const paths = hoistSchemas(copy.paths ?? {})
  if (!isObject(paths)) throw new Error('no paths')
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !isObject(operation.responses)) continue
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!isObject(response)) continue
        if (isObject(response.headers)) {
          for (const [name, header] of Object.entries(response.headers)) {
            response.headers[name] = { $ref: `#/components/headers/${named(headers, name.replace(/[^A-Za-z0-9]/g, ''), header)}` }
          }
        }
        const name = named(responses, `${String(operation.operationId)}${status}`, response)
        // A chain of two: the operation's response names a shared one, which names the component.
        responses[`${name}Alias`] = { $ref: `#/components/responses/${name}` }
        operation.responses[status] = { $ref: `#/components/responses/${name}Alias` }
      }
    }
  }
  const components = isObject(copy.components) ? copy.components : {}
  return { ...copy, paths, components: { ...components, schemas, headers, responses } }
}

function countRefs (node: Json): number {
  if (Array.isArray(node)) return node.reduce<number>((sum, item) => sum + countRefs(item), 0)
  if (!isObject(node)) return 0
  return Object.entries(node).reduce<number>((sum, [key, value]) => sum + (key === '$ref' ? 1 : countRefs(value)), 0)
}

/** Problems with the document's own wording of where they are taken out, so that two documents' verdicts compare. */
const verdict = (problems: string[]): string[] => problems.map((p) => p.replace(/#\/[^\s]*/g, '#…'))

describe('the OpenAPI checker', () => {
  let subject: TestApp
  let text: string
  let checker: OpenApiChecker
  let key: string

  before(async () => {
    subject = await buildTestApp()
    text = (await subject.app.inject({ url: '/v1/openapi.json' })).body
    checker = new OpenApiChecker(text, { errorSchema: ErrorBody })
    key = await subject.newKey('enterprise', { perMinute: 1000, perDay: 1000 })
  })

  after(async () => {
    await subject.close()
  })

  test('When a response is as documented, then it finds nothing', () => {
    assert.deepEqual(checker.check({ method: 'GET', url: '/v1/pets' }, listing()), { operation: 'listPets', problems: [] })
  })

  test('When the status, a header or the body is not as documented, then it says which', () => {
    const request = { method: 'GET', url: '/v1/pets?limit=1' }
    const cases: Array<[ReceivedResponse, RegExp]> = [
      [listing({ status: 418 }), /status 418 is not documented for listPets/],
      [listing({}, [['x-powered-by', 'petstore']]), /header x-powered-by .* is not documented/],
      [listing({}, [['link', 'not a link']]), /header link: "not a link" must match pattern/],
      [listing({ headers: [['content-type', 'application/json'], ['x-ratelimit-limit', '-1']] }), /header x-ratelimit-limit: "-1" must be >= 0/],
      [listing({ headers: [['content-type', 'application/json'], ['x-ratelimit-limit', '1.5']] }), /header x-ratelimit-limit: "1\.5" must be integer/],
      [listing({ body: '[{"id":"1","name":"Rex","categoryId":1,"status":"available"}]' }), /body \/0\/id must be integer/],
      [listing({ body: '[{"id":1,"name":"Rex","categoryId":1,"status":"available","extra":1}]' }), /must NOT have additional properties/],
      [listing({ body: '[{"id":1,"name":" ","categoryId":1,"status":"available"}]' }), /\/0\/name must match pattern/],
      [listing({ body: '{' }), /the body is not JSON/],
      [listing({ headers: [['content-type', 'text/html']] }), /Content-Type text\/html is not documented/]
    ]
    for (const [response, expected] of cases) {
      const { problems } = checker.check(request, response)
      assert.ok(problems.some((p) => expected.test(p)), `${expected}: ${JSON.stringify(problems)}`)
    }
  })

  test('When a header the document marks required is missing, then it says so', () => {
    const document = JSON.parse(text) as { [key: string]: Json }
    const strict = JSON.parse(JSON.stringify(document).replace(/"X-RateLimit-Limit":\{/g, '"X-RateLimit-Limit":{"required":true,')) as { [key: string]: Json }
    const requiring = new OpenApiChecker(JSON.stringify(strict), { errorSchema: ErrorBody })
    const { problems } = requiring.check({ method: 'GET', url: '/v1/pets' }, listing({ headers: [['content-type', 'application/json']] }))
    assert.deepEqual(problems, ['GET /v1/pets → 200: required header x-ratelimit-limit is missing'])
  })

  test('When an id is one past the largest int64, then it is refused; the largest itself passes', () => {
    const body = (id: string): string => `[{"id":${id},"name":"Rex","categoryId":1,"status":"available"}]`
    assert.deepEqual(checker.check({ method: 'GET', url: '/v1/pets' }, listing({ body: body('9223372036854775807') })).problems, [])
    for (const id of ['9223372036854775808', '9223372036854775807.5', '1e19', '18446744073709551616']) {
      assert.match(checker.check({ method: 'GET', url: '/v1/pets' }, listing({ body: body(id) })).problems.join('\n'), /\/0\/id must be/, id)
    }
    assert.equal(exactInteger('9.223372036854775807e18'), 9223372036854775807n)
    assert.equal(exactInteger('1.5'), undefined)
  })

  test('When a request reaches no operation, then its answer must be an Error body', () => {
    const request = { method: 'DELETE', url: '/v1/pets' }
    const error = (body: string): ReceivedResponse => ({ status: 405, headers: [['content-type', 'application/json'], ['allow', 'GET, HEAD, POST']], body })
    assert.deepEqual(checker.check(request, error('{"code":"method_not_allowed","message":"No.","status":405}')), { operation: undefined, problems: [] })
    assert.match(checker.check(request, error('{"code":"method_not_allowed"}')).problems.join('\n'), /must have required property 'message'/)
    assert.match(checker.check(request, { status: 200, headers: [], body: '[]' }).problems.join('\n'), /got 200, not an error/)
  })

  test('When the document names its schemas, headers and responses as components by $ref, then every verdict is the same as on the document without them', async () => {
    const document = JSON.parse(text) as { [key: string]: Json }
    const referring = withComponents(document)
    assert.ok(countRefs(referring) > 100, 'the rewritten document should use $ref throughout')
    // Int64 bounds are carried over as written: the rewritten text keeps them exact.
    const referringText = JSON.stringify(referring).replace(/9223372036854776000/g, '9223372036854775807')
    const other = new OpenApiChecker(referringText)
    const created = await subject.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(key), payload: '{"name":"Rex","categoryId":9223372036854775807}' })
    const cases: Array<[{ method: 'GET' | 'POST' | 'DELETE', url: string }, ReceivedResponse]> = [
      [{ method: 'POST', url: '/v1/pets' }, received(created)],
      ...await Promise.all([
        { method: 'GET' as const, url: '/v1/pets?limit=1' },
        { method: 'GET' as const, url: '/v1/pets?limit=0' },
        { method: 'GET' as const, url: '/v1/pets/1' },
        { method: 'GET' as const, url: '/v1/pets/424242' },
        { method: 'DELETE' as const, url: '/v1/pets' },
        { method: 'GET' as const, url: '/v1/nothing' }
      ].map(async (request): Promise<[typeof request, ReceivedResponse]> => [request, received(await subject.app.inject({ ...request, headers: jsonHeaders(key) }))])),
      [{ method: 'GET', url: '/v1/pets' }, listing({}, [['x-powered-by', 'petstore'], ['x-ratelimit-limit', 'x']])],
      [{ method: 'GET', url: '/v1/pets' }, listing({ body: '[{"id":9223372036854775808,"name":"","categoryId":0,"status":"lost"}]' })],
      [{ method: 'GET', url: '/v1/pets/1' }, { status: 404, headers: [['content-type', 'application/json']], body: '{"code":"gone","message":"x","status":410}' }]
    ]
    let failing = 0
    for (const [request, response] of cases) {
      const here = checker.check(request, response)
      const there = other.check(request, response)
      assert.equal(there.operation, here.operation)
      assert.deepEqual(verdict(there.problems), verdict(here.problems), `${request.method} ${request.url} → ${response.status}`)
      if (here.problems.length > 0) failing++
    }
    // Both ways of writing it refuse the same bad responses, and pass the good ones.
    assert.equal(failing, 3)
  })
})
