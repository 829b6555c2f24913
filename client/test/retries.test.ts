// When and how the client tries a request again: only after a 429, a 503,
// a 409 `idempotency_key_in_use` or a network error; never sooner than
// Retry-After; with capped exponential backoff and full jitter; within
// maxRetries and the time budget. On fake timers.
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import { PetstoreError, RateLimitedError } from 'petstore-client'
import { PET_JSON, errorResponse, fakeFetch, flush, jsonResponse, newClient, settle, useFakeTimers } from './support.js'

describe('retries', () => {
  beforeEach(useFakeTimers)
  afterEach(() => { mock.timers.reset(); mock.restoreAll() })

  it('When a 429 says Retry-After: 2, then the retry is sent no sooner than 2 s later', async () => {
    // Arrange
    mock.method(Math, 'random', () => 0)
    const service = fakeFetch((_, n) => n === 0 ? errorResponse(429, 'rate_limited', { 'retry-after': '2' }) : jsonResponse(200, '[]'))
    const client = newClient(service.fetch)

    // Act
    const listing = client.listPets()
    await flush()
    mock.timers.tick(1999)
    await flush()
    const sentBefore2s = service.received.length
    mock.timers.tick(1)
    const page = await listing

    // Assert
    assert.equal(sentBefore2s, 1)
    assert.deepEqual(service.received.map((r) => r.at), [0, 2000])
    assert.deepEqual(page.pets, [])
  })

  it('When the service keeps answering 503, then each wait is a random part of a ceiling that doubles up to its cap', async () => {
    // Arrange: each wait is random × ceiling; these draws make it visible.
    const draws = [0.5, 0.25, 1, 0.75, 1, 1, 0.5, 1]
    mock.method(Math, 'random', () => draws.shift() ?? 1)
    const service = fakeFetch(() => errorResponse(503, 'service_unavailable'))
    const client = newClient(service.fetch, { maxRetries: 8, timeoutMs: 600_000 })

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)

    // Assert
    const waits = service.received.slice(1).map((r, i) => r.at - (service.received[i]?.at ?? 0))
    // Ceilings 500, 1000, 2000, 4000, 8000, 16000, then the 20 s cap.
    assert.deepEqual(waits, [250, 250, 2000, 3000, 8000, 16000, 10000, 20000])
    assert.ok(error instanceof PetstoreError)
    assert.equal(error.status, 503)
  })

  it('When a 503 says Retry-After longer than the backoff, then the wait is the Retry-After', async () => {
    // Arrange
    mock.method(Math, 'random', () => 1)
    const service = fakeFetch((_, n) => n === 0 ? errorResponse(503, 'service_unavailable', { 'retry-after': '5' }) : jsonResponse(200, '[]'))
    const client = newClient(service.fetch)

    // Act
    await settle(client.listPets())

    // Assert
    assert.deepEqual(service.received.map((r) => r.at), [0, 5000])
  })

  it('When a create gets 409 idempotency_key_in_use with Retry-After: 1, then it is sent again after 1 s with the same key', async () => {
    // Arrange
    mock.method(Math, 'random', () => 0)
    const service = fakeFetch((_, n) => n === 0 ? errorResponse(409, 'idempotency_key_in_use', { 'retry-after': '1' }) : jsonResponse(201, PET_JSON))
    const client = newClient(service.fetch)

    // Act
    const pet = await settle(client.createPet({ name: 'Rex', categoryId: 1 }))

    // Assert
    assert.equal(pet.id, 1n)
    assert.deepEqual(service.received.map((r) => r.at), [0, 1000])
    const [first, second] = service.received.map((r) => r.headers.get('idempotency-key'))
    assert.ok(first !== null && first !== undefined && first.length > 0)
    assert.equal(second, first)
  })

  it('When a create\'s response is lost in a network error, then the same request is sent again with the same Idempotency-Key', async () => {
    // Arrange
    const service = fakeFetch((_, n) => n === 0 ? new TypeError('fetch failed') : jsonResponse(201, PET_JSON))
    const client = newClient(service.fetch)

    // Act
    const pet = await settle(client.createPet({ name: 'Rex', categoryId: 1 }))

    // Assert
    assert.equal(pet.name, 'Rex')
    assert.equal(service.received.length, 2)
    const [first, second] = service.received
    assert.ok(first !== undefined && second !== undefined)
    assert.equal(second.headers.get('idempotency-key'), first.headers.get('idempotency-key'))
    assert.equal(second.body, first.body)
  })

  it('When two creates are made, then each has an Idempotency-Key of its own', async () => {
    // Arrange
    const service = fakeFetch(() => jsonResponse(201, PET_JSON))
    const client = newClient(service.fetch)

    // Act
    await settle(client.createPet({ name: 'Rex', categoryId: 1 }))
    await settle(client.createPet({ name: 'Rex', categoryId: 1 }))

    // Assert
    const keys = service.received.map((r) => r.headers.get('idempotency-key'))
    assert.equal(new Set(keys).size, 2)
  })

  for (const [status, code] of [[500, 'internal_error'], [400, 'invalid_request'], [404, 'not_found'], [422, 'idempotency_key_reused']] as const) {
    it(`When the service answers ${status} ${code}, then the call fails without a retry`, async () => {
      // Arrange
      const service = fakeFetch(() => errorResponse(status, code))
      const client = newClient(service.fetch)

      // Act
      const error = await settle(client.createPet({ name: 'Rex', categoryId: 1 })).catch((e: unknown) => e)

      // Assert
      assert.ok(error instanceof PetstoreError)
      assert.equal(error.code, code)
      assert.equal(service.received.length, 1)
    })
  }

  it('When every retry meets a 429, then the call fails after maxRetries with a RateLimitedError that says when to come back', async () => {
    // Arrange
    const service = fakeFetch(() => errorResponse(429, 'rate_limited', { 'retry-after': '3' }))
    const client = newClient(service.fetch, { maxRetries: 2 })

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)

    // Assert
    assert.equal(service.received.length, 3)
    assert.ok(error instanceof RateLimitedError)
    assert.equal(error.code, 'rate_limited')
    assert.equal(error.retryAt.getTime(), (service.received.at(-1)?.at ?? 0) + 3000)
  })

  it('When Retry-After is longer than the time budget left, then the call fails at once instead of waiting', async () => {
    // Arrange
    const service = fakeFetch(() => errorResponse(429, 'rate_limited', { 'retry-after': '60' }))
    const client = newClient(service.fetch, { timeoutMs: 30_000 })

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof RateLimitedError)
    assert.equal(service.received.length, 1)
    assert.equal(Date.now(), 0)
  })

  it('When the network keeps failing, then the network error is thrown after maxRetries', async () => {
    // Arrange
    const service = fakeFetch(() => new TypeError('fetch failed'))
    const client = newClient(service.fetch, { maxRetries: 3 })

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof TypeError)
    assert.equal(service.received.length, 4)
  })
})
