import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { appWithKey, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'

describe('the error model', () => {
  let t: TestApp
  let token: string
  before(async () => { ({ t, token } = await appWithKey('pro')) })
  after(async () => { await t.close() })

  it('When a route does not exist under /v1, then 404 not_found as an Error body', async () => {
    const response = await t.app.inject({ url: '/v1/animals', headers: bearer(token) })

    assert.equal(response.statusCode, 404)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    assert.deepEqual(Object.keys(errorOf(response)).sort(), ['code', 'message', 'status'])
    assert.equal(errorOf(response).status, 404)
  })

  it('When a route does not exist outside /v1, then 404 not_found without rate-limit headers', async () => {
    const response = await t.app.inject({ url: '/pets' })

    assert.equal(response.statusCode, 404)
    assert.equal(errorOf(response).code, 'not_found')
    assert.equal(response.headers['x-ratelimit-limit'], undefined)
  })

  for (const [method, url, allow] of [
    ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
    ['PUT', '/v1/pets', 'GET, HEAD, POST'],
    ['PATCH', '/v1/pets/1', 'GET, HEAD'],
    ['POST', '/v1/pets/1', 'GET, HEAD'],
    ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
    ['TRACE', '/v1/pets', 'GET, HEAD, POST'],
    ['QUERY', '/v1/pets/7', 'GET, HEAD'],
    ['PROPFIND', '/v1/pets', 'GET, HEAD, POST']
  ] as const) {
    it(`When ${method} ${url} is sent, then 405 with Allow: ${allow}`, async () => {
      const response = await t.app.inject({ method, url, headers: bearer(token) })

      assert.equal(response.statusCode, 405)
      assert.equal(errorOf(response).code, 'method_not_allowed')
      assert.equal(response.headers.allow, allow)
    })
  }

  for (const [when, url] of [['a path is not valid percent-encoding', '/v1/pets/%zz'], ['a path segment is 2,000 characters', `/v1/pets/${'1'.repeat(2000)}`]]) {
    it(`When ${when}, then 400 invalid_request as an Error body`, async () => {
      const response = await t.app.inject({ url, headers: bearer(token) })

      assert.equal(response.statusCode, 400)
      assert.equal(errorOf(response).code, 'invalid_request')
      assert.ok(response.body.length < 2000)
      assert.ok(response.headers['x-ratelimit-remaining'], 'counted, with the rate-limit headers')
    })
  }

  it('When an unknown field has a very long name, then the error names it cut short', async () => {
    const response = await t.app.inject({
      method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'a', categoryId: 1, ['x'.repeat(10_000)]: 1 })
    })

    assert.equal(response.statusCode, 400)
    const field = errorOf(response).details?.[0]?.field ?? ''
    assert.ok(field.startsWith('body.xxx') && field.length <= 200, field)
  })

  it('When a method is not allowed, then 405 comes before the body is read', async () => {
    const response = await t.app.inject({ method: 'DELETE', url: '/v1/pets/1', headers: { ...bearer(token), 'content-type': 'application/json' }, payload: '{' })
    assert.equal(response.statusCode, 405)
  })

  it('When HEAD is sent to a GET route, then it answers like GET without a body', async () => {
    const response = await t.app.inject({ method: 'HEAD', url: '/v1/pets', headers: bearer(token) })
    assert.equal(response.statusCode, 200)
    assert.equal(response.body, '')
  })

  it('When the database is closed, then 503 service_unavailable with Retry-After and no internals', async () => {
    const broken = await buildTestApp()
    const brokenToken = await broken.newKey('pro')
    // Warm the key cache, then take the database away.
    await broken.app.inject({ url: '/v1/pets', headers: bearer(brokenToken) })
    await broken.storage.close()
    const response = await broken.app.inject({ url: '/v1/pets', headers: bearer(brokenToken) })
    const ready = await broken.app.inject({ url: '/readyz' })
    await broken.app.close()

    assert.equal(response.statusCode, 503)
    assert.equal(errorOf(response).code, 'service_unavailable')
    assert.ok(Number(response.headers['retry-after']) >= 1)
    assert.doesNotMatch(response.body, /SQLite|sqlite|at \w+ \(/)
    assert.equal(ready.statusCode, 503)
  })

  it('When the key cannot be checked because the database is down, then 503 with the rate-limit headers', async () => {
    const t2 = await buildTestApp()
    const key = await t2.newKey('pro')
    await t2.storage.close()
    const response = await t2.app.inject({ url: '/v1/pets', headers: bearer(key) })
    await t2.app.close()

    assert.equal(response.statusCode, 503)
    assert.equal(errorOf(response).code, 'service_unavailable')
    assert.ok(response.headers['x-ratelimit-limit'])
  })

  it('When the database is down and the keys that could not be checked have spent their address\'s anonymous quota, then they still get 503 service_unavailable, not 429', async () => {
    // Arrange: many clients behind one address, retrying through an outage.
    const t2 = await buildTestApp()
    const key = await t2.newKey('pro')
    await t2.storage.close()
    for (let i = 0; i < 60; i++) await t2.app.inject({ url: '/v1/pets', headers: bearer(key) })

    // Act
    const response = await t2.app.inject({ url: '/v1/pets', headers: bearer(key) })
    await t2.app.close()

    // Assert
    assert.equal(response.statusCode, 503, response.body)
    assert.equal(errorOf(response).code, 'service_unavailable')
    assert.equal(response.headers['retry-after'], '5')
    assert.equal(response.headers['x-ratelimit-remaining'], '0', 'still counted against the address')
  })

  it('When something unexpected throws, then 500 internal_error without a stack trace', async () => {
    const t2 = await buildTestApp()
    const key = await t2.newKey('pro')
    const fail = async (): Promise<never> => { throw new TypeError('secret internal detail') }
    // However the page is read: as rows, or as SQLite's JSON.
    t2.storage.listPets = fail
    t2.storage.listPetsJson = fail
    const response = await t2.app.inject({ url: '/v1/pets', headers: bearer(key) })
    await t2.close()

    assert.equal(response.statusCode, 500)
    assert.equal(errorOf(response).code, 'internal_error')
    assert.doesNotMatch(response.body, /secret internal detail|TypeError|\.js:/)
  })

  it('When a response is sent, then it carries a request id', async () => {
    const response = await t.app.inject({ url: '/healthz' })
    assert.match(String(response.headers['x-request-id']), /^[0-9a-f-]{36}$/)
  })
})

describe('CORS', () => {
  it('When CORS_ORIGINS is set, then an allowed origin gets the headers exposed; others get none', async () => {
    const t = await buildTestApp({ CORS_ORIGINS: 'https://app.example.test' })
    try {
      const token = await t.newKey('pro')
      const allowed = await t.app.inject({ url: '/v1/pets', headers: { ...bearer(token), origin: 'https://app.example.test' } })
      const other = await t.app.inject({ url: '/v1/pets', headers: { ...bearer(token), origin: 'https://evil.example.test' } })
      const preflight = await t.app.inject({
        method: 'OPTIONS', url: '/v1/pets', headers: { origin: 'https://app.example.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' }
      })

      assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.test')
      for (const name of ['Link', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Deprecation', 'Sunset', 'Idempotent-Replayed']) {
        assert.match(String(allowed.headers['access-control-expose-headers']), new RegExp(name))
      }
      assert.equal(other.headers['access-control-allow-origin'], undefined)
      assert.equal(preflight.statusCode, 204)
      assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.test')
    } finally {
      await t.close()
    }
  })

  it('When CORS_ORIGINS is set and an OPTIONS is not a preflight, then it passes the gate and gets 401, then 405 with Allow or 404, as an Error body with the rate-limit headers (regression: a plain OPTIONS skipped the gate and got a text/plain 400)', async () => {
    // Arrange
    const t = await buildTestApp({ CORS_ORIGINS: 'https://app.example.test' })
    try {
      const token = await t.newKey('pro')
      const options = async (url: string, headers: Record<string, string>) => await t.app.inject({ method: 'OPTIONS', url, headers })

      // Act
      const anonymous = await options('/v1/pets', {})
      const keyed = await options('/v1/pets', { ...bearer(token), origin: 'https://app.example.test' })
      const anonymousUnknown = await options('/v1/nope', {})
      const keyedUnknown = await options('/v1/nope', bearer(token))
      const prefixAlone = await options('/v1', {})
      const noMethod = await options('/v1/pets', { ...bearer(token), origin: 'https://app.example.test', 'access-control-request-headers': 'authorization' })

      // Assert
      assert.equal(anonymous.statusCode, 401)
      assert.equal(errorOf(anonymous).code, 'missing_api_key')
      assert.equal(anonymous.headers['x-ratelimit-limit'], '60')
      assert.equal(keyed.statusCode, 405)
      assert.equal(keyed.headers.allow, 'GET, HEAD, POST')
      assert.equal(keyed.headers['access-control-allow-origin'], 'https://app.example.test')
      assert.ok(keyed.headers['x-ratelimit-remaining'] !== undefined)
      assert.equal(anonymousUnknown.statusCode, 401)
      assert.equal(anonymousUnknown.headers['x-ratelimit-limit'], '60')
      assert.equal(keyedUnknown.statusCode, 404)
      assert.equal(errorOf(keyedUnknown).code, 'not_found')
      assert.ok(keyedUnknown.headers['x-ratelimit-remaining'] !== undefined)
      assert.equal(noMethod.statusCode, 405)
      assert.equal(prefixAlone.statusCode, 401)
    } finally {
      await t.close()
    }
  })

  it('When CORS_ORIGINS is unset, then no CORS headers are sent', async () => {
    const t = await buildTestApp()
    try {
      const response = await t.app.inject({ url: '/healthz', headers: { origin: 'https://app.example.test' } })
      assert.equal(response.headers['access-control-allow-origin'], undefined)
    } finally {
      await t.close()
    }
  })
})
