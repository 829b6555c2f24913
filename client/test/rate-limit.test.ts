// The rate limit as the client sees it: the state of the last response, a
// ban that stops the client sending, and pacing that keeps its own traffic
// clear of 429s. On fake timers.
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import { ApiKeyBannedError, PetstoreError } from 'petstore-client'
import { errorResponse, fakeFetch, flush, jsonResponse, newClient, settle, useFakeTimers, type Received } from './support.js'

const BAN_SECONDS = 900

describe('the rate limit', () => {
  beforeEach(useFakeTimers)
  afterEach(() => { mock.timers.reset(); mock.restoreAll() })

  it('When responses carry X-RateLimit-*, then rateLimit is what the last one said, an error\'s included', async () => {
    // Arrange
    const headers = (remaining: number): Record<string, string> =>
      ({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': String(remaining), 'x-ratelimit-reset': '1800000060' })
    const service = fakeFetch((_, n) => n === 0 ? jsonResponse(200, '[]', headers(59)) : errorResponse(404, 'not_found', headers(58)))
    const client = newClient(service.fetch)
    const before = client.rateLimit

    // Act
    await settle(client.listPets())
    const afterFirst = client.rateLimit
    await settle(client.getPet(7n)).catch(() => {})

    // Assert
    assert.equal(before, undefined)
    assert.deepEqual(afterFirst, { limit: 60, remaining: 59, resetAt: new Date(1_800_000_060_000) })
    assert.deepEqual(client.rateLimit, { limit: 60, remaining: 58, resetAt: new Date(1_800_000_060_000) })
  })

  it('When the key is banned, then the call is not retried, the error says when the ban ends, and no call is sent until then', async () => {
    // Arrange
    const service = fakeFetch((_, n) => n === 0
      ? errorResponse(429, 'api_key_banned', { 'retry-after': String(BAN_SECONDS), 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(BAN_SECONDS) })
      : jsonResponse(200, '[]'))
    const client = newClient(service.fetch, { maxRetries: 5, timeoutMs: 3_600_000 })

    // Act
    const banned = await settle(client.listPets()).catch((e: unknown) => e)
    mock.timers.tick(BAN_SECONDS * 1000 - 1)
    const refused = await settle(client.listPets()).catch((e: unknown) => e)
    const sentWhileBanned = service.received.length
    mock.timers.tick(1)
    const page = await settle(client.listPets())

    // Assert
    assert.ok(banned instanceof ApiKeyBannedError)
    assert.ok(banned instanceof PetstoreError)
    assert.equal(banned.code, 'api_key_banned')
    assert.equal(banned.until.getTime(), BAN_SECONDS * 1000)
    assert.ok(banned.response !== undefined)
    assert.ok(refused instanceof ApiKeyBannedError)
    assert.equal(refused.until.getTime(), BAN_SECONDS * 1000)
    assert.equal(refused.response, undefined)
    assert.equal(sentWhileBanned, 1)
    assert.equal(service.received.length, 2)
    assert.deepEqual(page.pets, [])
  })

  it('When pace is on and a burst of calls is made, then none meets a 429 and they are spread over the windows', async () => {
    // Arrange: a service that admits 5 requests per fixed 60-second window.
    const LIMIT = 5
    const WINDOW_MS = 60_000
    const admitted = new Map<number, number>()
    let refused = 0
    const limited = (request: Received): Response => {
      const window = Math.floor(request.at / WINDOW_MS)
      const used = admitted.get(window) ?? 0
      const reset = String((window + 1) * WINDOW_MS / 1000)
      if (used >= LIMIT) {
        refused++
        return errorResponse(429, 'rate_limited', { 'retry-after': '1', 'x-ratelimit-limit': String(LIMIT), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset })
      }
      admitted.set(window, used + 1)
      return jsonResponse(200, '[]', { 'x-ratelimit-limit': String(LIMIT), 'x-ratelimit-remaining': String(LIMIT - used - 1), 'x-ratelimit-reset': reset })
    }
    const service = fakeFetch(limited)
    const client = newClient(service.fetch, { pace: true, timeoutMs: 600_000 })

    // Act
    const calls = Array.from({ length: 12 }, async () => await client.listPets())
    const pages = await settle(Promise.all(calls))

    // Assert
    assert.equal(pages.length, 12)
    assert.equal(refused, 0)
    assert.equal(service.received.length, 12)
    assert.deepEqual([...admitted.values()], [LIMIT, LIMIT, 2])
    // The first window's five, evenly over it (its reset is taken 1 s late, against clock skew).
    assert.deepEqual(service.received.slice(0, LIMIT).map((r) => r.at), [0, 12_200, 24_400, 36_600, 48_800])
  })

  it('When pace is on and the next free slot is past the time budget, then the call fails at once without a request', async () => {
    // Arrange
    const service = fakeFetch(() => jsonResponse(200, '[]', { 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '3600' }))
    const client = newClient(service.fetch, { pace: true, timeoutMs: 10_000 })
    await settle(client.listPets())

    // Act
    const error = await settle(client.listPets()).catch((e: unknown) => e)
    await flush()

    // Assert
    assert.ok(error instanceof PetstoreError)
    assert.equal(error.code, 'rate_limited')
    assert.equal(error.response, undefined)
    assert.equal(service.received.length, 1)
  })
})
