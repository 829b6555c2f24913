// Shedding under overload (docs/OPERATING.md: Overload): while the load
// reads over a threshold, API requests get 503 `overloaded` before their key
// is looked up or counted (SHED=on), or are served and logged (SHED=log);
// SHED=off sheds nothing; the health checks, the document and the admin
// listener are never shed. The load is the test's own, set by hand, but for
// one test that blocks the event loop for real.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/http/app.js'
import { buildAdminApp } from '../../src/http/admin.js'
import { loadConfig } from '../../src/config.js'
import type { Storage } from '../../src/db/storage.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { RateLimitStore } from '../../src/limits/store.js'
import { READ_EVERY_MS, eventLoopDelay, watchLoad, type LoadReading, type LoadSignal, type Overload } from '../../src/telemetry/load.js'
import { createMetrics } from '../../src/telemetry/metrics.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { buildTestApp, capturingLogger, errorOf, jsonHeaders, type LogEntry, type TestApp } from '../support/app.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { OpenApiChecker, receivedOf } from '../support/openapi-check.js'
import { pausedListings } from '../support/paused-listings.js'
import { pollUntil } from '../support/process.js'
import { BUSY_IN_FLIGHT } from '../../src/plugins/shed.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'

/** A load the test sets: calm until told otherwise. */
class TestLoad implements Overload {
  cause: LoadSignal | undefined = undefined
  reading: LoadReading = { eventLoopDelayMs: 3, dbPoolWaitMs: undefined }

  /** Over twice the default threshold (200 ms) unless told: every API request is shed, whoever sends it. */
  overloaded (eventLoopDelayMs = 450): void {
    this.cause = 'event_loop_delay'
    this.reading = { eventLoopDelayMs, dbPoolWaitMs: undefined }
  }

  calm (): void {
    this.cause = undefined
    this.reading = { eventLoopDelayMs: 3, dbPoolWaitMs: undefined }
  }
}

/** A storage whose calls on a request's path are noted: a key's lookup, the animals' reads and writes. */
function watchedStorage (storage: Storage): { storage: Storage, calls: string[] } {
  const onTheRequestPath = new Set(['findApiKeyByTokenHash', 'getPet', 'getPetJson', 'listPets', 'listPetsJson', 'createPet', 'createPetOnce'])
  const calls: string[] = []
  return { storage: noting(storage, onTheRequestPath, calls), calls }
}

/** A rate-limit store whose counts are noted. */
function watchedLimiter (limiter: RateLimitStore): { limiter: RateLimitStore, calls: string[] } {
  const calls: string[] = []
  return { limiter: noting(limiter, new Set(['hit']), calls), calls }
}

function noting<T extends object> (target: T, names: ReadonlySet<string>, calls: string[]): T {
  return new Proxy(target, {
    get (object, property) {
      const value: unknown = Reflect.get(object, property, object)
      if (typeof value !== 'function' || !names.has(String(property))) return typeof value === 'function' ? value.bind(object) : value
      return (...args: unknown[]) => {
        calls.push(String(property))
        return Reflect.apply(value, object, args)
      }
    }
  })
}

const shedLines = (entries: LogEntry[]): Array<LogEntry & { requests?: number, shed?: string, cause?: string }> =>
  entries.filter((entry) => entry.msg?.includes('overloaded') === true && entry.requestId === undefined)

describe('shedding under overload', () => {
  let t: TestApp | undefined
  afterEach(async () => { await t?.close() })

  it('When the service is overloaded, then an API request gets 503 overloaded with Retry-After and the rate-limit headers of no window, and its key is neither looked up nor counted, nor its body read', async () => {
    // Arrange
    const load = new TestLoad()
    const storage = watchedStorage(openSqlite('sqlite::memory:'))
    const limiter = watchedLimiter(new MemoryStore())
    t = await buildTestApp({}, { storage: storage.storage, limiter: limiter.limiter, overload: load })
    const token = await t.newKey('free')
    load.overloaded()

    // Act
    const listed = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })
    const created = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: '{"name": not json' })

    // Assert
    for (const response of [listed, created]) {
      assert.equal(response.statusCode, 503)
      assert.deepEqual(errorOf(response), {
        code: 'overloaded',
        message: 'The service is overloaded: wait for the number of seconds in Retry-After, then back off exponentially.',
        status: 503
      })
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.equal(response.headers['retry-after'], '2')
      assert.equal(response.headers['x-ratelimit-limit'], '0')
      assert.equal(response.headers['x-ratelimit-remaining'], '0')
      assert.equal(response.headers['x-ratelimit-reset'], String(Math.ceil(t.clock.now() / 1000) + 2))
      assert.equal(response.headers['ratelimit-policy'], '"overload";q=0;w=2')
      assert.equal(response.headers.ratelimit, '"overload";r=0;t=2')
    }
    assert.deepEqual(storage.calls, [], 'the database was asked')
    assert.deepEqual(limiter.calls, [], 'the request was counted')
  })

  it('When the load is over its threshold but under twice it, then a key with 4 requests in flight has its next shed, while another key\'s request is served', async () => {
    // Arrange: the greedy key's four listings held in flight.
    const load = new TestLoad()
    const listings = pausedListings(openSqlite('sqlite::memory:'))
    t = await buildTestApp({}, { storage: listings.storage, overload: load })
    const app = t.app
    const greedy = await t.newKey('pro')
    const polite = await t.newKey('pro')
    const held = Array.from({ length: BUSY_IN_FLIGHT }, async () => await app.inject({ url: '/v1/pets', headers: bearer(greedy) }))
    await pollUntil(async () => (listings.waiting() === BUSY_IN_FLIGHT ? true : undefined), { ms: 5_000, every: 10, what: `${BUSY_IN_FLIGHT} listings held` })
    load.overloaded(300)

    // Act
    const greedyNext = await app.inject({ url: '/v1/pets', headers: bearer(greedy) })
    const politeAnswer = app.inject({ url: '/v1/pets', headers: bearer(polite) })
    await pollUntil(async () => (listings.waiting() === BUSY_IN_FLIGHT + 1 ? true : undefined), { ms: 5_000, every: 10, what: 'the polite key\'s listing' })
    listings.open()
    const served = await Promise.all([...held, politeAnswer])

    // Assert
    assert.equal(`${greedyNext.statusCode} ${errorOf(greedyNext).code}`, '503 overloaded')
    assert.equal(greedyNext.headers['retry-after'], '2')
    assert.deepEqual(served.map((answer) => answer.statusCode), [200, 200, 200, 200, 200])
  })

  it('When the overload ends, then API requests are served again, and the shed ones spent none of the key\'s quota', async () => {
    // Arrange
    const load = new TestLoad()
    t = await buildTestApp({}, { overload: load })
    const token = await t.newKey('free')
    load.overloaded()
    for (let i = 0; i < 5; i++) assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(token) })).statusCode, 503)

    // Act
    load.calm()
    const served = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['x-ratelimit-remaining'], '59')
  })

  it('When the database pool\'s wait is what is over its threshold, then requests are shed alike', async () => {
    // Arrange
    const load = new TestLoad()
    t = await buildTestApp({}, { overload: load })
    const token = await t.newKey('free')
    load.cause = 'db_pool_wait'
    load.reading = { eventLoopDelayMs: 2, dbPoolWaitMs: 1_100 }

    // Act
    const response = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(response.statusCode, 503)
    assert.equal(errorOf(response).code, 'overloaded')
  })

  it('When requests are shed, then each has its request line at info, and one warn line in 10 s says how many were shed and why; the first served after says the overload ended', async () => {
    // Arrange
    const load = new TestLoad()
    const { logger, entries } = capturingLogger()
    t = await buildTestApp({}, { overload: load, logger })
    const token = await t.newKey('free')
    const { app } = t
    const send = async (): Promise<LightMyRequestResponse> => await app.inject({ url: '/v1/pets', headers: bearer(token) })
    load.overloaded(412)

    // Act
    const statuses = [(await send()).statusCode, (await send()).statusCode, (await send()).statusCode]
    t.clock.advance(10_000)
    statuses.push((await send()).statusCode)
    load.calm()
    const afterwards = (await send()).statusCode
    t.clock.advance(10_000)
    const later = (await send()).statusCode

    // Assert
    assert.deepEqual([...statuses, afterwards, later], [503, 503, 503, 503, 200, 200])
    const requestLines = entries().filter((entry) => entry.requestId !== undefined && entry.status === 503)
    assert.equal(requestLines.length, 4)
    for (const line of requestLines) assert.deepEqual([line.level, line.code, line.err], [30, 'overloaded', undefined])
    const lines = shedLines(entries())
    assert.deepEqual(lines.map((line) => [line.level, line.shed, line.cause, line.requests]), [
      [40, 'on', 'event_loop_delay', 1],
      [40, 'on', 'event_loop_delay', 3],
      [30, 'on', undefined, 0]
    ])
    assert.match(lines[0]?.msg ?? '', /event loop's delay is 412 ms, over SHED_EVENT_LOOP_DELAY_MS=200/)
    assert.match(lines[2]?.msg ?? '', /^no longer overloaded/)
  })

  it('When SHED=log and the service is overloaded, then requests are served, counted as usual, and the log says how many would have been shed, at most once in 10 s', async () => {
    // Arrange
    const load = new TestLoad()
    const { logger, entries } = capturingLogger()
    t = await buildTestApp({ SHED: 'log' }, { overload: load, logger })
    const token = await t.newKey('free')
    load.overloaded()

    // Act
    const responses: LightMyRequestResponse[] = []
    for (let i = 0; i < 3; i++) responses.push(await t.app.inject({ url: '/v1/pets', headers: bearer(token) }))
    t.clock.advance(10_000)
    responses.push(await t.app.inject({ url: '/v1/pets', headers: bearer(token) }))

    // Assert
    assert.deepEqual(responses.map((r) => r.statusCode), [200, 200, 200, 200])
    assert.equal(responses.at(-1)?.headers['x-ratelimit-remaining'], '56')
    const lines = shedLines(entries())
    assert.deepEqual(lines.map((line) => [line.level, line.shed, line.requests]), [[40, 'log', 1], [40, 'log', 3]])
    assert.match(lines[0]?.msg ?? '', /would have been shed .*SHED=log serves them/)
  })

  it('When SHED=off, then nothing is shed, however overloaded the load reads', async () => {
    // Arrange
    const load = new TestLoad()
    t = await buildTestApp({ SHED: 'off' }, { overload: load })
    const token = await t.newKey('free')
    load.overloaded(5_000)

    // Act
    const response = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    // Assert
    assert.equal(response.statusCode, 200)
  })

  it('When the service is overloaded, then the health checks, the OpenAPI document and the docs page are answered as always', async () => {
    // Arrange
    const load = new TestLoad()
    t = await buildTestApp({}, { overload: load })
    load.overloaded()

    // Act
    const { app } = t
    const answers = await Promise.all(['/healthz', '/readyz', '/v1/openapi.json', '/v1/docs'].map(async (url) => [url, (await app.inject({ url })).statusCode]))

    // Assert
    assert.deepEqual(answers, [['/healthz', 200], ['/readyz', 200], ['/v1/openapi.json', 200], ['/v1/docs', 200]])
  })

  it('When the public API is shedding, then the admin listener serves its metrics, which count the shed requests, and its admin API', async () => {
    // Arrange
    const load = new TestLoad()
    const limiter = new MemoryStore()
    const storage = openSqlite('sqlite::memory:')
    const metrics = createMetrics({ limiter, poolUse: () => storage.poolUse(), droppedLogLines: () => 0 })
    t = await buildTestApp({}, { storage, limiter, metrics, overload: load })
    const admin = await buildAdminApp({ metrics, api: { token: ADMIN_TOKEN, storage, environment: 'production' } })
    try {
      load.overloaded()
      const shed = await t.app.inject({ url: '/v1/pets' })

      // Act
      const scraped = await admin.inject({ url: '/metrics' })
      const keys = await admin.inject({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress: '127.0.0.1' })

      // Assert
      assert.equal(shed.statusCode, 503)
      assert.equal(scraped.statusCode, 200)
      assert.match(scraped.body, /^petstore_shed_requests_total\{mode="on"\} 1$/m)
      assert.match(scraped.body, /^petstore_shed_requests_total\{mode="log"\} 0$/m)
      assert.equal(keys.statusCode, 200)
    } finally {
      await admin.close()
    }
  })

  it('When a /v1 URL the router cannot decode comes while the service is overloaded, then it is shed too, before the gate', async () => {
    // Arrange
    const load = new TestLoad()
    const limiter = watchedLimiter(new MemoryStore())
    t = await buildTestApp({}, { limiter: limiter.limiter, overload: load })
    load.overloaded()

    // Act
    const response = await t.app.inject({ url: '/v1/pets/%zz' })

    // Assert
    assert.equal(response.statusCode, 503)
    assert.equal(errorOf(response).code, 'overloaded')
    assert.deepEqual(limiter.calls, [])
  })

  it('When an operation\'s request is shed, then its answer and every header it carries are as the OpenAPI document describes, the deprecated operation\'s headers included', async () => {
    // Arrange
    const load = new TestLoad()
    t = await buildTestApp({}, { overload: load })
    const token = await t.newKey('free')
    const checker = new OpenApiChecker((await t.app.inject({ url: '/v1/openapi.json' })).body)
    const requests = [
      { method: 'GET', url: '/v1/pets' },
      { method: 'POST', url: '/v1/pets', payload: newPetJson() },
      { method: 'GET', url: '/v1/pets/1' },
      { method: 'GET', url: '/v1/rate_limit' }
    ] as const
    load.overloaded()

    // Act
    const { app } = t
    const answers = await Promise.all(requests.map(async (request) => ({ request, response: await app.inject({ ...request, headers: jsonHeaders(token) }) })))

    // Assert
    for (const { request, response } of answers) {
      assert.equal(response.statusCode, 503)
      assert.deepEqual(checker.check(request, receivedOf(response)).problems, [], `${request.method} ${request.url}`)
    }
    assert.equal(answers[2]?.response.headers.deprecation, '@1795132800')
  })

  it('When the service\'s start holds the event loop for 350 ms, then the first reading once it is ready is calm, and its first requests are served (regression: a restarted service shed its first request, 30 ms after listening)', async (context) => {
    // Arrange: the app's own load watch, whose half-second timer the test moves.
    context.mock.timers.enable({ apis: ['setInterval'] })
    const storage = openSqlite('sqlite::memory:')
    const limiter = new MemoryStore()
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }), storage, limiter })
    try {
      const until = performance.now() + 450
      while (performance.now() < until) { /* busy, as loading and compiling are */ }

      // Act
      await app.ready()
      context.mock.timers.tick(READ_EVERY_MS)
      const first = await app.inject({ url: '/v1/pets' })

      // Assert
      assert.equal(first.statusCode, 401, first.body)
    } finally {
      await app.close()
      await storage.close()
      await limiter.close()
    }
  })

  it('When the event loop is blocked for 450 ms, twice the threshold, then the reading after it sheds API requests, and the next calm reading stops it', async () => {
    // Arrange: the real event loop's delay, read only when the test says.
    const delay = eventLoopDelay()
    const watch = watchLoad({
      read: () => ({ eventLoopDelayMs: delay.read(), dbPoolWaitMs: undefined }),
      thresholds: { eventLoopDelayMs: 200, dbPoolWaitMs: 500 },
      everyMs: 3_600_000
    })
    try {
      t = await buildTestApp({}, { overload: watch })
      const token = await t.newKey('free')
      watch.read()

      // Act
      const until = performance.now() + 450
      while (performance.now() < until) { /* busy: the loop cannot turn */ }
      await turnOfTheLoop()
      watch.read()
      const blocked = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })
      await turnOfTheLoop()
      watch.read()
      const calm = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

      // Assert
      assert.equal(blocked.statusCode, 503, `read ${watch.reading.eventLoopDelayMs} ms`)
      assert.equal(errorOf(blocked).code, 'overloaded')
      assert.equal(calm.statusCode, 200)
    } finally {
      watch.close()
      delay.close()
    }
  })
})

/** Lets the event loop turn once, timers included, so that Node's histogram records the turn that just ended. */
async function turnOfTheLoop (): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1))
}
