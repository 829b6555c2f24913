// The OpenAPI checker (test/support/openapi-check.ts) itself: that it finds
// what it is there to find, that it compares int64 values exactly, and that
// it follows the document's `$ref`s to its components.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildTestApp, type TestApp } from '../support/app.js'
import { exactInteger, OpenApiChecker, type ReceivedResponse } from '../support/openapi-check.js'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

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

function countRefs (node: Json): number {
  if (Array.isArray(node)) return node.reduce<number>((sum, item) => sum + countRefs(item), 0)
  if (!isObject(node)) return 0
  return Object.entries(node).reduce<number>((sum, [key, value]) => sum + (key === '$ref' ? 1 : countRefs(value)), 0)
}

describe('the OpenAPI checker', () => {
  let subject: TestApp
  let text: string
  let checker: OpenApiChecker

  before(async () => {
    subject = await buildTestApp()
    text = (await subject.app.inject({ url: '/v1/openapi.json' })).body
    checker = new OpenApiChecker(text)
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
    const requiring = new OpenApiChecker(JSON.stringify(strict))
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

  test('When the document reaches its schemas, headers and responses by $ref, then the checker follows each to what it names', () => {
    const request = { method: 'GET', url: '/v1/pets' }

    const badStatus = checker.check(request, listing({ body: '[{"id":1,"name":"Rex","categoryId":1,"status":"lost"}]' }))
    const badHeader = checker.check(request, listing({}, [['ratelimit', 'plenty']]))
    const badError = checker.check({ method: 'GET', url: '/v1/pets/1' }, { status: 404, headers: [['content-type', 'application/json']], body: '{"code":"gone","message":"x","status":410}' })

    assert.ok(countRefs(JSON.parse(text) as Json) > 50, 'the served document should reach its components by $ref')
    assert.match(badStatus.problems.join('\n'), /status/)
    assert.match(badHeader.problems.join('\n'), /header ratelimit/)
    assert.ok(badError.problems.length > 0)
  })
})
