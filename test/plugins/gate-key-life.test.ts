// Scopes and expiry at the gate (docs/KEYS.md, and The order a request
// takes): a key outside its scopes gets 403 after it is counted, and before
// its body is read; an expired key is refused as an invalid one, from the
// instant it expires, even while its lookup is cached.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Scope } from '../../src/domain.js'
import { issueKey } from '../../src/keys/manage.js'
import { buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, newPetJson } from '../support/fixtures.js'

/** A pro key (300 a minute) with these scopes and this expiry, on the app's clock. */
async function keyWith (t: TestApp, { scopes, expiresInMs, perMinute }: { scopes?: Scope[], expiresInMs?: number, perMinute?: number } = {}): Promise<string> {
  const key = await issueKey(t.storage, {
    plan: perMinute === undefined ? 'pro' : 'enterprise',
    name: 'test',
    perMinute,
    perDay: perMinute === undefined ? undefined : 10_000,
    scopes,
    expiresAt: expiresInMs === undefined ? null : t.clock.now() + expiresInMs,
    environment: t.config.environment,
    now: t.clock.now()
  })
  return key.token
}

describe('scopes at the gate', () => {
  let t: TestApp
  beforeEach(async () => { t = await buildTestApp() })
  afterEach(async () => { await t.close() })

  it('When a read-only key adds an animal, then 403 insufficient_scope naming pets:write, with the rate-limit headers, counted against the key, and nothing added', async () => {
    // Arrange
    const token = await keyWith(t, { scopes: ['pets:read'] })

    // Act
    const refused = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })
    const next = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(refused.statusCode, 403)
    assert.deepEqual(errorOf(refused), {
      code: 'insufficient_scope',
      message: 'This API key does not have the scope pets:write, which this operation needs.',
      status: 403
    })
    assert.equal(refused.headers['www-authenticate'], 'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"')
    assert.equal(refused.headers['x-ratelimit-limit'], '300', 'the 403 carries the key\'s limit, not the address\'s')
    assert.equal(refused.headers['x-ratelimit-remaining'], '299')
    assert.ok(refused.headers['x-ratelimit-reset'] !== undefined)
    assert.notEqual(refused.headers.connection, 'close', 'a valid key keeps its connection')
    assert.equal(next.statusCode, 200)
    assert.deepEqual(next.json(), [], 'the animal was added')
    assert.equal(next.headers['x-ratelimit-remaining'], '298', 'the 403 was not counted against the key')
  })

  for (const [method, url] of [['GET', '/v1/pets'], ['GET', '/v1/pets/1']] as const) {
    it(`When a write-only key sends ${method} ${url}, then 403 naming pets:read`, async () => {
      // Arrange
      const token = await keyWith(t, { scopes: ['pets:write'] })

      // Act
      const response = await t.app.inject({ method, url, headers: bearer(token) })

      // Assert
      assert.equal(response.statusCode, 403)
      assert.equal(errorOf(response).code, 'insufficient_scope')
      assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore", error="insufficient_scope", scope="pets:read"')
      assert.equal(response.headers['x-ratelimit-remaining'], '299')
    })
  }

  it('When a key has both scopes, then it reads and writes', async () => {
    // Arrange
    const token = await keyWith(t, { scopes: ['pets:read', 'pets:write'] })

    // Act
    const created = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })
    const listed = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(created.statusCode, 201)
    assert.equal(listed.statusCode, 200)
  })

  const beforeTheBody: Array<[string, Record<string, string>, string]> = [
    ['no Content-Type (else 415)', {}, newPetJson()],
    ['a body that is not JSON (else 400)', { 'content-type': 'application/json' }, '{"name":'],
    ['a body over 16 KiB (else 413)', { 'content-type': 'application/json' }, `{"name":"${'x'.repeat(17_000)}"}`]
  ]
  for (const [what, headers, payload] of beforeTheBody) {
    it(`When a read-only key adds an animal with ${what}, then 403: a key that may not write learns nothing of its body`, async () => {
      // Arrange
      const token = await keyWith(t, { scopes: ['pets:read'] })

      // Act
      const response = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...bearer(token), ...headers }, payload })

      // Assert
      assert.equal(response.statusCode, 403)
      assert.equal(errorOf(response).code, 'insufficient_scope')
    })
  }

  const routedAway: Array<[string, string, number]> = [
    ['DELETE', '/v1/pets', 405],
    ['GET', '/v1/nope', 404],
    ['GET', '/v1/pets/%zz', 400]
  ]
  for (const [method, url, status] of routedAway) {
    it(`When a key of neither route's scope sends ${method} ${url}, then ${status}, as for any key: the router's answers come before the scope`, async () => {
      // Arrange
      const readOnly = await keyWith(t, { scopes: ['pets:read'] })
      const writeOnly = await keyWith(t, { scopes: ['pets:write'] })

      // Act
      const answers = [
        await t.app.inject({ method: method as 'GET', url, headers: bearer(readOnly) }),
        await t.app.inject({ method: method as 'GET', url, headers: bearer(writeOnly) })
      ]

      // Assert
      assert.deepEqual(answers.map((answer) => answer.statusCode), [status, status])
    })
  }

  it('When a read-only key has spent its minute, then a POST gets 429, not 403: the limit comes first', async () => {
    // Arrange
    const token = await keyWith(t, { scopes: ['pets:read'], perMinute: 1 })
    const first = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })

    // Act
    const second = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })

    // Assert
    assert.equal(first.statusCode, 403)
    assert.equal(second.statusCode, 429)
    assert.equal(errorOf(second).code, 'rate_limited')
  })
})

describe('expiry at the gate', () => {
  let t: TestApp
  beforeEach(async () => { t = await buildTestApp() })
  afterEach(async () => { await t.close() })

  it('When a key has expired, then 401 invalid_api_key saying so, with error="invalid_token", counted against the address', async () => {
    // Arrange
    const token = await keyWith(t, { expiresInMs: 60_000 })
    t.clock.advance(60_000)

    // Act
    const response = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(response.statusCode, 401)
    assert.equal(errorOf(response).code, 'invalid_api_key')
    assert.match(errorOf(response).message, /^The API key expired at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z; /)
    assert.match(String(response.headers['www-authenticate']), /^Bearer realm="petstore", error="invalid_token"/)
    assert.equal(response.headers['x-ratelimit-limit'], '60', 'the expired key was counted as a key, not against its address')
    assert.equal(response.headers['x-ratelimit-remaining'], '59')
  })

  it('When a key expires while its lookup is cached, then it is refused from that instant, not when the cache forgets it', async () => {
    // Arrange: the lookup is cached for 500 ms; the key expires 100 ms after it was cached.
    const token = await keyWith(t, { expiresInMs: 100 })
    const before = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })
    t.clock.advance(99)
    const justBefore = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Act
    t.clock.advance(1)
    const at = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.deepEqual([before.statusCode, justBefore.statusCode], [200, 200])
    assert.equal(at.statusCode, 401)
    assert.match(errorOf(at).message, /expired/)
  })

  it('When a key expires in the future, then it works until then', async () => {
    // Arrange
    const token = await keyWith(t, { expiresInMs: 86_400_000 })

    // Act
    const response = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(response.statusCode, 200)
  })
})
