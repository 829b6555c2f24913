// The operations as a caller sees them: exact int64 values both ways,
// paging, typed errors and the deprecated getPet.
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import { ApiKeyBannedError, InsufficientScopeError, PetstoreError, RateLimitedError, type DeprecationNotice } from 'petstore-client'
import { BASE_URL, PET_JSON, errorResponse, fakeFetch, jsonResponse, newClient, settle, useFakeTimers } from './support.js'

const INT64_MAX = 9223372036854775807n

describe('the operations', () => {
  beforeEach(useFakeTimers)
  afterEach(() => { mock.timers.reset(); mock.restoreAll() })

  it('When the service returns ids past 2^53, then id and categoryId come back as exact bigints and other numbers as numbers', async () => {
    // Arrange
    const body = `[{"id":${INT64_MAX},"name":"Rex","categoryId":9007199254740993,"status":"sold"}]`
    const client = newClient(fakeFetch(() => jsonResponse(200, body)).fetch)

    // Act
    const { pets } = await settle(client.listPets())

    // Assert
    assert.deepEqual(pets, [{ id: INT64_MAX, name: 'Rex', categoryId: 9007199254740993n, status: 'sold' }])
  })

  it('When fetchRateLimit is called, then it asks GET /rate_limit and gives its numbers as numbers', async () => {
    // Arrange
    const body = '{"plan":"free","limits":[{"window":"minute","limit":60,"remaining":59,"reset":1795650720},{"window":"day","limit":1000,"remaining":999,"reset":1795737600}],"bannedUntil":null}'
    const service = fakeFetch(() => jsonResponse(200, body))
    const client = newClient(service.fetch)

    // Act
    const status = await settle(client.fetchRateLimit())

    // Assert
    assert.equal(service.received[0]?.method, 'GET')
    assert.equal(service.received[0]?.url.pathname, '/v1/rate_limit')
    assert.deepEqual(status, {
      plan: 'free',
      limits: [{ window: 'minute', limit: 60, remaining: 59, reset: 1795650720 }, { window: 'day', limit: 1000, remaining: 999, reset: 1795737600 }],
      bannedUntil: null
    })
  })

  it('When categoryId is a bigint, then it is sent as a JSON integer, digit for digit', async () => {
    // Arrange
    const service = fakeFetch(() => jsonResponse(201, PET_JSON))
    const client = newClient(service.fetch)

    // Act
    await settle(client.createPet({ name: 'Rex', categoryId: INT64_MAX, status: 'pending' }))

    // Assert
    assert.equal(service.received[0]?.body, `{"name":"Rex","categoryId":${INT64_MAX},"status":"pending"}`)
    assert.equal(service.received[0]?.headers.get('content-type'), 'application/json')
    assert.equal(service.received[0]?.headers.get('authorization'), 'Bearer pet_live_test')
  })

  it('When categoryId is a number a double cannot hold exactly, then createPet refuses it without sending', async () => {
    // Arrange
    const service = fakeFetch(() => jsonResponse(201, PET_JSON))
    const client = newClient(service.fetch)

    // Act
    const error = await settle(client.createPet({ name: 'Rex', categoryId: 2 ** 60 })).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof RangeError)
    assert.equal(service.received.length, 0)
  })

  it('When pages carry Link rel="next", then allPets follows them to the end, asking the client\'s own address with the cursor', async () => {
    // Arrange: the links name another host, which the client must not call.
    const pages = [
      { body: '[{"id":1,"name":"A","categoryId":1,"status":"available"},{"id":2,"name":"B","categoryId":1,"status":"available"}]', next: 'c1' },
      { body: '[{"id":3,"name":"C","categoryId":1,"status":"available"},{"id":4,"name":"D","categoryId":1,"status":"available"}]', next: 'c2' },
      { body: '[{"id":5,"name":"E","categoryId":1,"status":"available"}]', next: undefined }
    ]
    const service = fakeFetch((_, n) => {
      const page = pages[n] ?? { body: '[]', next: undefined }
      const link: Record<string, string> = page.next === undefined ? {} : { link: `<https://elsewhere.example/v1/pets?limit=2&status=available&cursor=${page.next}>; rel="next"` }
      return jsonResponse(200, page.body, link)
    })
    const client = newClient(service.fetch)

    // Act
    const ids: bigint[] = []
    await settle((async () => { for await (const pet of client.allPets({ status: 'available', limit: 2 })) ids.push(pet.id) })())

    // Assert
    assert.deepEqual(ids, [1n, 2n, 3n, 4n, 5n])
    assert.deepEqual(service.received.map((r) => `${r.url.origin}${r.url.pathname}`), Array(3).fill(`${BASE_URL}/pets`))
    assert.deepEqual(service.received.map((r) => r.url.searchParams.get('cursor')), [null, 'c1', 'c2'])
    assert.deepEqual(service.received.map((r) => r.url.searchParams.get('status')), ['available', 'available', 'available'])
    assert.deepEqual(service.received.map((r) => r.url.searchParams.get('limit')), ['2', '2', '2'])
  })

  it('When listPets gets a page with Link rel="next", then it returns that cursor as nextCursor', async () => {
    // Arrange
    const link = `<${BASE_URL}/pets?limit=1&cursor=AQAAAAAAAAAB>; rel="next"`
    const client = newClient(fakeFetch(() => jsonResponse(200, '[]', { link })).fetch)

    // Act
    const page = await settle(client.listPets({ limit: 1 }))

    // Assert
    assert.equal(page.nextCursor, 'AQAAAAAAAAAB')
  })

  it('When the service answers an Error body, then the PetstoreError carries its code, message, status, details and the response', async () => {
    // Arrange
    const body = '{"code":"invalid_request","message":"The request is not valid: body.name is required.","status":400,"details":[{"field":"body.name","reason":"is required"}]}'
    const client = newClient(fakeFetch(() => jsonResponse(400, body)).fetch)

    // Act
    const error = await settle(client.createPet({ name: '', categoryId: 1 })).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof PetstoreError)
    assert.equal(error.name, 'PetstoreError')
    assert.equal(error.code, 'invalid_request')
    assert.equal(error.message, 'The request is not valid: body.name is required.')
    assert.equal(error.status, 400)
    assert.deepEqual(error.details, [{ field: 'body.name', reason: 'is required' }])
    assert.equal(error.response?.status, 400)
  })

  it('When a response is not the service\'s Error, then the PetstoreError says unexpected_response with the HTTP status', async () => {
    // Arrange
    const client = newClient(fakeFetch(() => new Response('<html>Bad gateway</html>', { status: 502, statusText: 'Bad Gateway' })).fetch)

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof PetstoreError)
    assert.equal(error.code, 'unexpected_response')
    assert.equal(error.status, 502)
  })

  it('When errors of each kind are thrown, then RateLimitedError and ApiKeyBannedError are PetstoreErrors', async () => {
    // Arrange
    const limited = newClient(fakeFetch(() => errorResponse(429, 'rate_limited', { 'retry-after': '1' })).fetch, { maxRetries: 0 })
    const banned = newClient(fakeFetch(() => errorResponse(429, 'api_key_banned', { 'retry-after': '900' })).fetch)

    // Act
    const errors = [await settle(limited.listPets()).catch((e: unknown) => e), await settle(banned.listPets()).catch((e: unknown) => e)]

    // Assert
    assert.ok(errors[0] instanceof RateLimitedError && errors[0] instanceof PetstoreError)
    assert.equal(errors[0].name, 'RateLimitedError')
    assert.ok(errors[1] instanceof ApiKeyBannedError && errors[1] instanceof PetstoreError)
    assert.equal(errors[1].name, 'ApiKeyBannedError')
  })

  it('When the service answers 403 insufficient_scope, then the call fails at once with an InsufficientScopeError naming the scope', async () => {
    // Arrange
    const service = fakeFetch(() => errorResponse(403, 'insufficient_scope', {
      'www-authenticate': 'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"'
    }))
    const client = newClient(service.fetch)

    // Act
    const error = await settle(client.createPet({ name: 'Rex', categoryId: 1 })).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof InsufficientScopeError && error instanceof PetstoreError)
    assert.equal(error.name, 'InsufficientScopeError')
    assert.equal(error.code, 'insufficient_scope')
    assert.equal(error.status, 403)
    assert.equal(error.scope, 'pets:write')
    assert.equal(service.received.length, 1, 'a 403 is not retried')
  })

  it('When two responses say Deprecation, then onDeprecation is called once, with the sunset and the successor', async () => {
    // Arrange
    const deprecated = {
      deprecation: '@1795132800',
      sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
      link: `<${BASE_URL}/pets>; rel="successor-version", <${BASE_URL}/docs>; rel="deprecation"; type="text/html"`
    }
    const notices: DeprecationNotice[] = []
    const client = newClient(fakeFetch(() => jsonResponse(200, PET_JSON, deprecated)).fetch, { onDeprecation: (notice) => notices.push(notice) })

    // Act
    await settle(client.getPet(1n))
    await settle(client.getPet(1))

    // Assert
    assert.deepEqual(notices, [{
      method: 'GET',
      url: `${BASE_URL}/pets/1`,
      deprecatedAt: new Date('2026-11-20T00:00:00Z'),
      sunset: new Date('2030-12-05T00:00:00Z'),
      successor: `${BASE_URL}/pets`
    }])
  })

  it('When no onDeprecation is given, then the first deprecated response writes one warning', async () => {
    // Arrange
    const warn = mock.method(console, 'warn', () => {})
    const service = fakeFetch(() => jsonResponse(200, PET_JSON, { deprecation: '@1795132800', sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' }))
    const client = newClient(service.fetch, { onDeprecation: undefined })

    // Act
    await settle(client.getPet(1n))
    await settle(client.getPet(1n))

    // Assert
    assert.equal(warn.mock.callCount(), 1)
    assert.match(String(warn.mock.calls[0]?.arguments[0]), /GET \/v1\/pets\/1 is deprecated; it stops working on 2030-12-05/)
  })
})
