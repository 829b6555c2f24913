// Regression: "two Authorization headers are silently reduced to the first".
// Node keeps the first of two Authorization headers and drops the other, so
// a request carrying two was answered as if it carried one; which key its
// client meant is not known, so it is refused, like any request without a
// valid key: counted against its client address, then 401.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ANONYMOUS_PER_MINUTE } from '../../src/limits/plans.js'
import { appWithKey, errorOf, type TestApp } from '../support/app.js'

describe('two Authorization headers are silently reduced to the first', () => {
  let t: TestApp
  let valid: string
  let other: string
  before(async () => {
    ({ t, token: valid } = await appWithKey('pro'))
    other = await t.newKey('free')
  })
  after(async () => { await t.close() })

  // Each from an address of its own, so that only that request is counted against it.
  for (const [when, remoteAddress, headers] of [
    ['a valid key comes first', '192.0.2.1', () => [`Bearer ${valid}`, 'Bearer not-a-key']],
    ['two valid keys are sent', '192.0.2.2', () => [`Bearer ${valid}`, `Bearer ${other}`]],
    ['the same key is sent twice', '192.0.2.3', () => [`Bearer ${valid}`, `Bearer ${valid}`]]
  ] as const) {
    it(`When a request carries two Authorization headers and ${when}, then 401 invalid_api_key saying one is expected, counted against its address`, async () => {
      // Act
      const response = await t.app.inject({ url: '/v1/pets', remoteAddress, headers: { Authorization: [...headers()] } })

      // Assert
      assert.equal(response.statusCode, 401)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_api_key')
      assert.match(error.message, /one Authorization header/i)
      assert.match(String(response.headers['www-authenticate']), /error="invalid_token"/)
      assert.equal(response.headers['x-ratelimit-limit'], String(ANONYMOUS_PER_MINUTE), 'counted against the address, not a key')
      assert.equal(response.headers['x-ratelimit-remaining'], String(ANONYMOUS_PER_MINUTE - 1))
    })
  }
})
