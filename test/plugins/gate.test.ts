// The order a /v1 request takes (docs/API.md): identify, count and limit (429),
// refuse without a valid key (401), framing (400, 417); only then 404, 405
// or 403. Whatever the method or path, the route map is not shown to
// anonymous clients.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { gateStatuses } from '../../src/plugins/gate.js'
import { issueKey } from '../../src/keys/manage.js'

/** Requests that, with a valid key, get 404, 405 or 400 from the router. */
const ROUTED_AWAY = [
  { method: 'DELETE', url: '/v1/pets', withKey: 405 },
  { method: 'PROPFIND', url: '/v1/pets', withKey: 405 },
  { method: 'POST', url: '/v1/pets/1', withKey: 405 },
  { method: 'GET', url: '/v1/nope', withKey: 404 },
  { method: 'PUT', url: '/v1/nope', withKey: 404 },
  { method: 'GET', url: '/v1/pets/%zz', withKey: 400 }
] as const

describe('the order a /v1 request takes', () => {
  let t: TestApp
  beforeEach(async () => { t = await buildTestApp() })
  afterEach(async () => { await t.close() })

  const send = async (method: string, url: string, headers: Record<string, string> = {}) =>
    await t.app.inject({ method: method as 'GET', url, headers })

  for (const { method, url, withKey } of ROUTED_AWAY) {
    it(`When ${method} ${url} comes without a key, then 401, counted against the address; with a key, ${withKey}`, async () => {
      // Arrange
      const token = await t.newKey('free')

      // Act
      const anonymous = await send(method, url)
      const keyed = await send(method, url, bearer(token))

      // Assert
      assert.equal(anonymous.statusCode, 401)
      assert.equal(errorOf(anonymous).code, 'missing_api_key')
      assert.equal(anonymous.headers.allow, undefined, 'a keyless client learned the methods of a path')
      assert.equal(anonymous.headers['x-ratelimit-limit'], '60')
      assert.equal(anonymous.headers['x-ratelimit-remaining'], '59')
      assert.equal(keyed.statusCode, withKey)
      assert.equal(keyed.headers['x-ratelimit-remaining'], '59', 'the keyed request was not counted against its key')
    })
  }

  it('When an address has spent its limit, then keyless requests get 429, whatever their method or path', async () => {
    // Arrange
    for (let i = 0; i < 60; i++) assert.equal((await send('GET', '/v1/pets')).statusCode, 401)

    // Act
    const answers = await Promise.all(ROUTED_AWAY.map(async ({ method, url }) => await send(method, url)))

    // Assert
    for (const [i, answer] of answers.entries()) {
      assert.equal(answer.statusCode, 429, `${ROUTED_AWAY[i]?.method} ${ROUTED_AWAY[i]?.url}`)
      assert.equal(errorOf(answer).code, 'rate_limited')
      assert.ok(Number(answer.headers['retry-after']) >= 1)
    }
  })

  it('When a key has spent its limit, then 429 comes before 404 and 405', async () => {
    // Arrange
    const token = await t.newKey('enterprise', { perMinute: 1, perDay: 100 })
    assert.equal((await send('GET', '/v1/pets', bearer(token))).statusCode, 200)

    // Act
    const answers = await Promise.all(ROUTED_AWAY.map(async ({ method, url }) => await send(method, url, bearer(token))))

    // Assert
    for (const [i, answer] of answers.entries()) {
      assert.equal(answer.statusCode, 429, `${ROUTED_AWAY[i]?.method} ${ROUTED_AWAY[i]?.url}`)
      assert.equal(answer.headers.allow, undefined)
    }
  })

  it('When a request carries an Expect other than 100-continue, then without a key it gets 401, and with one 417 with the rate-limit headers, whatever the router would have answered', async () => {
    // Arrange
    const token = await t.newKey('free')
    const expecting = { expect: 'the-impossible' }

    // Act
    const anonymous = await Promise.all(ROUTED_AWAY.map(async ({ method, url }) => await send(method, url, expecting)))
    const keyed = await Promise.all(ROUTED_AWAY.map(async ({ method, url }) => await send(method, url, { ...expecting, ...bearer(token) })))

    // Assert
    for (const [i, answer] of anonymous.entries()) assert.equal(answer.statusCode, 401, `${ROUTED_AWAY[i]?.method} ${ROUTED_AWAY[i]?.url}`)
    for (const [i, answer] of keyed.entries()) {
      assert.equal(answer.statusCode, 417, `${ROUTED_AWAY[i]?.method} ${ROUTED_AWAY[i]?.url}`)
      assert.equal(errorOf(answer).code, 'expectation_failed')
      assert.equal(answer.headers.allow, undefined)
      assert.match(String(answer.headers['x-ratelimit-remaining']), /^\d+$/)
    }
  })

  it('When a key without the scope its operation needs sends an Expect other than 100-continue, then 417 comes before 403', async () => {
    // Arrange
    const { token } = await issueKey(t.storage, { plan: 'free', name: 'reader', perMinute: undefined, perDay: undefined, scopes: ['pets:read'], environment: t.config.environment, now: t.clock.now() })
    const post = { 'content-type': 'application/json', ...bearer(token) }

    // Act
    const expecting = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...post, expect: 'the-impossible' }, payload: '{"name":"Rex","categoryId":1}' })
    const plain = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: post, payload: '{"name":"Rex","categoryId":1}' })

    // Assert
    assert.equal(expecting.statusCode, 417)
    assert.equal(errorOf(expecting).code, 'expectation_failed')
    assert.equal(plain.statusCode, 403)
  })

  it('When a method is not allowed, then Allow lists the methods the router has for the path', async () => {
    // Arrange
    const token = await t.newKey('free')

    // Act
    const pets = await send('PATCH', '/v1/pets', bearer(token))
    const pet = await send('LOCK', '/v1/pets/1', bearer(token))

    // Assert
    assert.equal(pets.headers.allow, 'GET, HEAD, POST')
    assert.equal(pet.headers.allow, 'GET, HEAD')
    assert.equal(errorOf(pet).code, 'method_not_allowed')
  })

  it('When the OpenAPI document is served, then every operation documents each status the gate can answer, from the gate\'s own list', async () => {
    // Act
    const document = JSON.parse((await send('GET', '/v1/openapi.json')).body) as { paths: Record<string, Record<string, { operationId: string, responses: Record<string, unknown>, security?: unknown[] }>> }

    // Assert: 403 where a scope is needed, which is every operation but getRateLimit. The operations
    // that take no key (`security: [{}]`, the leak reports) are outside the gate: test/plugins/openapi.test.ts holds them to theirs.
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods))
      .filter((operation) => !(operation.security ?? []).some((requirement) => JSON.stringify(requirement) === '{}'))
    assert.ok(operations.length >= 4)
    for (const operation of operations) {
      const scoped = operation.operationId !== 'getRateLimit'
      for (const status of gateStatuses({ scoped })) assert.ok(String(status) in operation.responses, `${operation.operationId}: ${status} is not documented`)
      assert.equal('403' in operation.responses, scoped, `${operation.operationId}: 403 documented only where a scope is needed`)
    }
  })
})
