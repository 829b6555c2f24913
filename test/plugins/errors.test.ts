// The error handler's mapping of errors that carry only a status: each is
// named, none is turned into a 400 by default.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { toApiError } from '../../src/plugins/errors.js'
import { buildTestApp, errorOf, type TestApp } from '../support/app.js'

describe('errors known only by their status', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp() })
  after(async () => { await t.close() })

  for (const [status, headers] of [[416, { range: 'bytes=99999999-' }], [412, { 'if-match': '"nope"' }]] as const) {
    it(`When the docs page's file server refuses a request with ${status}, then it is answered 400 invalid_request, as mapped`, async () => {
      // Act
      const response = await t.app.inject({ url: '/v1/docs/static/swagger-ui.css', headers })

      // Assert
      assert.equal(response.statusCode, 400)
      assert.equal(errorOf(response).code, 'invalid_request')
    })
  }

  it('When an error carries a 4xx status nothing maps, then it is a fault (500, logged with its cause), not a 400 (regression: toApiError turned any unknown 4xx into a silent 400)', () => {
    // Arrange
    const unmapped = Object.assign(new Error('not acceptable'), { statusCode: 406 })

    // Act
    const answer = toApiError(unmapped)

    // Assert: undefined is what the error handler answers 500 for.
    assert.equal(answer, undefined)
  })
})
