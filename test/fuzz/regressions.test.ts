// What the fuzz tests found, each pinned by the request that showed it.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ErrorBody } from '../../src/schemas/error.js'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { OpenApiChecker, type ReceivedResponse } from '../support/openapi-check.js'
import type { LightMyRequestResponse } from 'fastify'

function received (response: LightMyRequestResponse): ReceivedResponse {
  return {
    status: response.statusCode,
    headers: Object.entries(response.headers).map(([name, value]): [string, string] => [name, String(value)]),
    body: response.body
  }
}

describe('regressions found by fuzzing', () => {
  let subject: TestApp
  let checker: OpenApiChecker
  let key: string

  before(async () => {
    subject = await buildTestApp()
    checker = new OpenApiChecker((await subject.app.inject({ url: '/v1/openapi.json' })).body, { errorSchema: ErrorBody })
    key = await subject.newKey('enterprise', { perMinute: 1000, perDay: 1000 })
  })

  after(async () => {
    await subject.close()
  })

  test('Regression: When a request to any operation carries an Expect other than 100-continue, then its 417 is a status the document gives that operation', async () => {
    const requests = [
      { method: 'GET' as const, url: '/v1/pets' },
      { method: 'POST' as const, url: '/v1/pets', payload: '{"name":"Rex","categoryId":1}' },
      { method: 'GET' as const, url: '/v1/pets/1' }
    ]
    for (const request of requests) {
      const response = await subject.app.inject({ ...request, headers: jsonHeaders(key, { expect: 'something-else' }) })
      assert.equal(response.statusCode, 417)
      assert.deepEqual(checker.check(request, received(response)).problems, [])
    }
  })
})
