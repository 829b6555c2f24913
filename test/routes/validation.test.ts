// The `details` of a 400 invalid_request, word for word and in order: what
// a client reads to fix its request, so a change of validation library must
// not change them.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Type } from '../../src/schemas/typebox.js'
import { appWithKey, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { compileValidator } from '../../src/schemas/validator.js'

const NAME_RULE = 'must be a string of 1 to 100 characters, not only white space, without control characters'
const ID_RULE = 'must be an integer from 1 to 9223372036854775807'
const STATUS_RULE = 'must be one of "available", "pending", "sold"'

describe('the details of a validation error', () => {
  let t: TestApp
  let token: string
  before(async () => { ({ t, token } = await appWithKey('pro')) })
  after(async () => { await t.close() })

  const post = async (payload: string, headers: Record<string, string> = {}) =>
    await t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json', ...headers }, payload })

  const bodies: Array<[string, string, Array<{ field: string, reason: string }>]> = [
    ['a required field is missing', '{"name":"a"}', [{ field: 'body.categoryId', reason: ID_RULE }]],
    ['every field is missing', '{}', [{ field: 'body.name', reason: NAME_RULE }, { field: 'body.categoryId', reason: ID_RULE }]],
    ['unknown fields and wrong values are sent', '{"name":5,"categoryId":1,"status":"x","x":1,"a/b":2}', [
      { field: 'body.x', reason: 'is not a known field' },
      { field: 'body.a~1b', reason: 'is not a known field' },
      { field: 'body.name', reason: NAME_RULE },
      { field: 'body.status', reason: STATUS_RULE }
    ]],
    ['the body is an array', '[{"name":"a","categoryId":1}]', [{ field: 'body', reason: 'must be object' }]]
  ]
  for (const [when, payload, details] of bodies) {
    it(`When ${when}, then the details name each problem in order`, async () => {
      const response = await post(payload)

      assert.equal(response.statusCode, 400)
      assert.deepEqual(errorOf(response).details, details)
    })
  }

  it('When 30 unknown fields are sent, then the first 20 are named, in the order sent', async () => {
    const fields = Array.from({ length: 30 }, (_, i) => `f${i}`)

    const response = await post(JSON.stringify({ name: 'a', categoryId: 1, ...Object.fromEntries(fields.map((f) => [f, 1])) }))

    assert.equal(response.statusCode, 400)
    assert.deepEqual(errorOf(response).details, fields.slice(0, 20).map((f) => ({ field: `body.${f}`, reason: 'is not a known field' })))
  })

  it('When the query has an unknown parameter and wrong values, then each is named, and the message lists them', async () => {
    const cursor = encodeURIComponent('🐈'.repeat(40))

    const response = await t.app.inject({ url: `/v1/pets?limit=0&cursor=${cursor}&status=available&status=sold&z=1`, headers: bearer(token) })

    assert.equal(response.statusCode, 400)
    const error = errorOf(response)
    assert.deepEqual(error.details, [
      { field: 'query.z', reason: 'is not a known field' },
      { field: 'query.limit', reason: 'must be an integer from 1 to 100' },
      { field: 'query.status', reason: STATUS_RULE },
      // 80 UTF-16 units, though 40 characters: the length is counted as it always was.
      { field: 'query.cursor', reason: 'must be string length less or equal to 64' },
      { field: 'query.cursor', reason: "must be string to match '^[A-Za-z0-9_-]+$'" }
    ])
    assert.match(error.message, /query\.z is not a known field; query\.limit must be an integer from 1 to 100; /)
  })

  it('When limit is not a number and cursor is empty, then both are named', async () => {
    const response = await t.app.inject({ url: '/v1/pets?limit=x&cursor=', headers: bearer(token) })

    assert.equal(response.statusCode, 400)
    assert.deepEqual(errorOf(response).details, [
      { field: 'query.limit', reason: 'must be an integer' },
      { field: 'query.cursor', reason: 'must be string length greater or equal to 1' },
      { field: 'query.cursor', reason: "must be string to match '^[A-Za-z0-9_-]+$'" }
    ])
  })

  it('When the path id exceeds int64, then the path parameter is named', async () => {
    const response = await t.app.inject({ url: '/v1/pets/9223372036854775808', headers: bearer(token) })

    assert.equal(response.statusCode, 400)
    assert.deepEqual(errorOf(response).details, [{ field: 'path.petId', reason: ID_RULE }])
  })

  it('When the Idempotency-Key is too long, then the header is named once', async () => {
    const response = await post('{"name":"a","categoryId":1}', { 'idempotency-key': 'k'.repeat(300) })

    assert.equal(response.statusCode, 400)
    assert.deepEqual(errorOf(response).details, [{ field: 'header.idempotency-key', reason: 'must be 1 to 255 printable ASCII characters' }])
  })
})

describe('the request validator', () => {
  it('When a request schema has a keyword the validator does not report on, then building it fails', () => {
    const schema = Type.Object({ kind: Type.String({ enum: ['a', 'b'] }) })

    assert.throws(() => compileValidator(schema, 'querystring'), /request schema not supported/)
  })
})
