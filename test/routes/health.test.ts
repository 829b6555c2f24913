import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { Decision, HitRequest, RateLimitStore, StoreHealth } from '../../src/limits/store.js'
import { buildTestApp, type TestApp } from '../support/app.js'

/** A rate-limit store that says whatever health the test gives it; it limits in-process. */
class FakeStore implements RateLimitStore {
  readonly name = 'fake'
  readonly #limits = new MemoryStore()
  answer: () => Promise<StoreHealth> = async () => ({ status: 'ok' })

  async hit (request: HitRequest, now: number): Promise<Decision> {
    return await this.#limits.hit(request, now)
  }

  async health (): Promise<StoreHealth> {
    return await this.answer()
  }

  async close (): Promise<void> {
    await this.#limits.close()
  }
}

/** Lets every callback that is due run: promise jobs and I/O, which the mocked clock does not hold back. */
async function settle (): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
}

interface ReadyBody {
  status: string
  checks: { database: string, rateLimitStore: string }
}

describe('GET /readyz', () => {
  let t: TestApp
  let store: FakeStore
  beforeEach(async () => {
    store = new FakeStore()
    t = await buildTestApp({}, { limiter: store })
  })
  afterEach(async () => { await t.close() })

  const ready = async () => await t.app.inject({ url: '/readyz' })

  it('When the database answers and the store is ok, then 200 with status ok and each check named', async () => {
    const response = await ready()

    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), { status: 'ok', checks: { database: 'ok (sqlite)', rateLimitStore: 'ok (fake)' } })
    assert.equal(response.headers['retry-after'], undefined)
  })

  it('When the store is degraded, then still 200, with status degraded and the reason named', async () => {
    // Arrange
    store.answer = async () => ({ status: 'degraded', reason: 'redis unreachable, limiting in-process' })

    // Act
    const response = await ready()

    // Assert
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), {
      status: 'degraded',
      checks: { database: 'ok (sqlite)', rateLimitStore: 'degraded (fake): redis unreachable, limiting in-process' }
    })
  })

  it('When the store is down, then 503 with Retry-After, status unavailable and the reason named', async () => {
    // Arrange
    store.answer = async () => ({ status: 'down', reason: 'redis unreachable' })

    // Act
    const response = await ready()

    // Assert
    assert.equal(response.statusCode, 503)
    assert.equal(response.headers['retry-after'], '5')
    assert.deepEqual(response.json(), {
      status: 'unavailable',
      checks: { database: 'ok (sqlite)', rateLimitStore: 'down (fake): redis unreachable' }
    })
  })

  it('When the store\'s health check throws, then 503 and the store is named down', async () => {
    // Arrange
    store.answer = async () => { throw new Error('connection reset') }

    // Act
    const response = await ready()

    // Assert
    assert.equal(response.statusCode, 503)
    assert.equal(response.json<ReadyBody>().checks.rateLimitStore, 'down (fake): health check failed')
    assert.doesNotMatch(response.body, /connection reset/, 'no internals')
  })

  it('When the store has not answered after 5 s, then 503 and the store is named down, not before', async (context) => {
    // Arrange: a health check that never answers, on a clock the test moves.
    let asked = (): void => {}
    const wasAsked = new Promise<void>((resolve) => { asked = resolve })
    store.answer = async () => { asked(); return await new Promise<StoreHealth>(() => {}) }
    context.mock.timers.enable({ apis: ['setTimeout'] })
    let answered = false
    const pending = ready().then((response) => { answered = true; return response })
    await wasAsked

    // Act
    context.mock.timers.tick(4_999)
    await settle()
    const answeredBefore5s = answered
    context.mock.timers.tick(1)
    await settle()
    const answeredAt5s = answered

    // Assert
    assert.equal(answeredBefore5s, false, 'still waiting at 4.999 s')
    assert.equal(answeredAt5s, true, 'answered at 5 s')
    const response = await pending
    assert.equal(response.statusCode, 503)
    assert.equal(response.json<ReadyBody>().checks.rateLimitStore, 'down (fake): no answer within 5 s')
  })

  it('When /readyz is called many times at once and again within the second (each call used to run a query and a store check), then the checks run once, and again once the second has passed', async (context) => {
    // Arrange: counted checks, on a clock the test moves.
    context.mock.timers.enable({ apis: ['setTimeout'] })
    const ping = context.mock.method(t.storage, 'ping')
    let storeAsked = 0
    store.answer = async () => { storeAsked++; return { status: 'ok' } }

    // Act: 100 at once, then 100 one after another, all within the second.
    const together = await Promise.all(Array.from({ length: 100 }, ready))
    const after = []
    for (let i = 0; i < 100; i++) after.push(await ready())
    const checksWithin = [ping.mock.callCount(), storeAsked]
    context.mock.timers.tick(1000)
    await settle()
    const next = await ready()

    // Assert
    assert.deepEqual([...together, ...after, next].map((response) => response.statusCode), Array(201).fill(200))
    assert.deepEqual(checksWithin, [1, 1], 'one database ping and one store check for 200 calls')
    assert.deepEqual([ping.mock.callCount(), storeAsked], [2, 2], 'checked again once the second had passed')
  })

  it('When the checks are slower than a second, then callers meanwhile wait for the one run in flight rather than start another', async (context) => {
    // Arrange: a store check that answers only when the test says so.
    context.mock.timers.enable({ apis: ['setTimeout'] })
    let storeAsked = 0
    let answer = (): void => {}
    store.answer = async () => {
      storeAsked++
      return await new Promise<StoreHealth>((resolve) => { answer = () => { resolve({ status: 'ok' }) } })
    }

    // Act: a call, 2 s in which its checks do not answer, another call, then the answer.
    const first = ready()
    await settle()
    context.mock.timers.tick(2000)
    await settle()
    const second = ready()
    await settle()
    answer()
    const responses = await Promise.all([first, second])

    // Assert
    assert.equal(storeAsked, 1)
    assert.deepEqual(responses.map((response) => response.statusCode), [200, 200])
  })

  it('When the database is down and the store degraded, then 503 naming both', async () => {
    // Arrange
    store.answer = async () => ({ status: 'degraded', reason: 'redis unreachable, limiting in-process' })
    await t.storage.close()

    // Act
    const response = await ready()

    // Assert
    assert.equal(response.statusCode, 503)
    assert.deepEqual(response.json(), {
      status: 'unavailable',
      checks: { database: 'unreachable (sqlite)', rateLimitStore: 'degraded (fake): redis unreachable, limiting in-process' }
    })
  })
})
