// Requests in flight per key (docs/API.md: Requests in flight): the gate
// holds a key to its own cap, else its plan's, and a request over it waits a moment, then
// gets 429 `concurrency_limited` without spending its windows or earning a ban.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { pausedListings, type Waits } from '../support/paused-listings.js'
import { bearer } from '../support/fixtures.js'
import { OpenApiChecker, receivedOf } from '../support/openapi-check.js'
import { makeTempDir, pollUntil, removeTempDir, sqliteUrl } from '../support/process.js'
import { openTestStore } from '../support/redis.js'
import { createMetrics } from '../../src/telemetry/metrics.js'

describe('requests in flight per key', () => {
  let t: TestApp | undefined
  let others: TestApp[] = []
  let dir: string | undefined
  afterEach(async () => {
    await Promise.all([t, ...others].map(async (app) => { await app?.close() }))
    others = []
    removeTempDir(dir)
    dir = undefined
  })

  it('When 200 requests of a free key arrive at once, then exactly 5 are served at a time, and the others get 429 concurrency_limited without spending the windows or earning a ban', async () => {
    // Arrange
    const listings = pausedListings(openSqlite('sqlite::memory:'))
    const metrics = createMetrics({ poolUse: () => listings.storage.poolUse(), droppedLogLines: () => 0, processMetrics: false })
    t = await buildTestApp({}, { storage: listings.storage, metrics })
    const app = t.app
    const token = await t.newKey('free')

    // Act
    const answers = Array.from({ length: 200 }, async () => await app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) }))
    await pollUntil(async () => (listings.waiting() === 5 ? true : undefined), { ms: 5_000, every: 10, what: '5 listings waiting' })
    // The others wait for a slot, then are refused; the first five are still held.
    const refused = await Promise.race([Promise.all(answers.slice(5)), new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('the refusals did not come')), 5_000))])
    listings.open()
    const served = await Promise.all(answers.slice(0, 5))
    const after = await app.inject({ method: 'GET', url: '/v1/rate_limit', headers: bearer(token) })
    const checker = new OpenApiChecker((await app.inject({ method: 'GET', url: '/v1/openapi.json' })).body)

    // Assert
    assert.equal(listings.most(), 5)
    assert.deepEqual(served.map((answer) => answer.statusCode), [200, 200, 200, 200, 200])
    assert.deepEqual(new Set(refused.map((answer) => `${answer.statusCode} ${errorOf(answer).code}`)), new Set(['429 concurrency_limited']))
    const one = refused[0]
    assert.ok(one !== undefined)
    assert.equal(one.headers['retry-after'], '1')
    assert.match(String(one.headers['ratelimit-policy']), /"concurrency";q=5;qu="concurrent-requests"/)
    assert.ok(one.headers['x-ratelimit-remaining'] !== undefined)
    assert.deepEqual(checker.check({ method: 'GET', url: '/v1/pets' }, receivedOf(one)).problems, [], 'the 429 is not as the OpenAPI document describes it')
    const minute = after.json() as { limits: Array<{ window: string, remaining: number }>, bannedUntil: number | null }
    assert.equal(minute.limits.find((limit) => limit.window === 'minute')?.remaining, 55)
    assert.equal(minute.bannedUntil, null)
    assert.match(await metrics.registry.metrics(), /^petstore_rate_limit_refusals_total\{code="concurrency_limited"\} 195$/m)
  })

  it('When a pro key has a cap of 2 of its own, then its third request in flight gets 429 concurrency_limited naming 2, and the two held are served', async () => {
    // Arrange: what `petstore keys create --plan pro --concurrency 2` makes; the plan alone would allow 25.
    const listings = pausedListings(openSqlite('sqlite::memory:'))
    t = await buildTestApp({}, { storage: listings.storage })
    const app = t.app
    const token = await t.newKey('pro', { concurrency: 2 })
    const held = Array.from({ length: 2 }, async () => await app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) }))
    await pollUntil(async () => (listings.waiting() === 2 ? true : undefined), { ms: 5_000, every: 10, what: '2 listings waiting' })

    // Act: held too, it would wait for ever.
    const third = await Promise.race([
      app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) }),
      new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('the third request was not refused')), 5_000))
    ]).finally(listings.open)
    const served = await Promise.all(held)

    // Assert
    assert.equal(`${third.statusCode} ${errorOf(third).code}`, '429 concurrency_limited')
    assert.match(String(third.headers['ratelimit-policy']), /"concurrency";q=2;qu="concurrent-requests"/)
    assert.match(errorOf(third).message, /already has 2 requests in flight/)
    assert.equal(listings.most(), 2)
    assert.deepEqual(served.map((answer) => answer.statusCode), [200, 200])
  })

  it('When a client resets its connection while its request is held, then its slot is given back at once', async () => {
    // Arrange: a real listener, so that a client can go.
    const listings = pausedListings(openSqlite('sqlite::memory:'))
    t = await buildTestApp({}, { storage: listings.storage })
    const token = await t.newKey('free')
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = t.app.server.address() as AddressInfo
    const clients = Array.from({ length: 5 }, () => {
      const outgoing = request({ host: '127.0.0.1', port, path: '/v1/pets', headers: bearer(token), agent: false })
      outgoing.on('error', () => {})
      outgoing.end()
      return outgoing
    })
    await pollUntil(async () => (listings.waiting() === 5 ? true : undefined), { ms: 5_000, every: 10, what: '5 listings waiting' })

    // Act: a reset, as a client that gives up does. A half-close (FIN) still
    // waits for its answers (http/edge.ts), so its slot is held until its answer is written.
    clients[0]?.socket?.resetAndDestroy()
    const sixth = t.app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) })

    // Assert: the sixth reaches the store while the other four are still held.
    await pollUntil(async () => (listings.waiting() === 6 ? true : undefined), { ms: 5_000, every: 10, what: 'a sixth listing' })
    listings.open()
    assert.equal((await sixth).statusCode, 200)
    for (const client of clients) client.destroy()
  })

  it('When 10 requests of a free key are held across two instances sharing Redis, then exactly 5 are in flight between them, and the other 5 get 429 concurrency_limited', async () => {
    // Arrange: two instances on one database and one Redis, as a deployment's share them; their listings wait, counted together.
    dir = makeTempDir()
    const url = sqliteUrl(dir)
    const namespace = randomUUID()
    const waits: Waits = { waiting: 0, most: 0 }
    const listings = [pausedListings(openSqlite(url), waits), pausedListings(openSqlite(url), waits)]
    const a = await buildTestApp({}, { storage: listings[0]?.storage, limiter: await openTestStore('single', { namespace }) })
    others.push(a)
    // The key first: the second instance then has it in its index from the start.
    const token = await a.newKey('free')
    const b = await buildTestApp({}, { storage: listings[1]?.storage, limiter: await openTestStore('single', { namespace }) })
    others.push(b)

    // Act: five requests to each instance.
    const settled: number[] = []
    const answers = Array.from({ length: 10 }, async (_, i) => {
      const answer = await (i % 2 === 0 ? a : b).app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) })
      settled.push(i)
      return answer
    })
    await pollUntil(async () => (settled.length === 5 ? true : undefined), { ms: 5_000, every: 10, what: 'the first 5 answers' })
    const refusedFirst = [...settled]
    const heldThen = waits.waiting
    for (const each of listings) each.open()
    const all = await Promise.all(answers)

    // Assert
    assert.equal(heldThen, 5)
    assert.equal(waits.most, 5)
    const statuses = all.map((answer) => answer.statusCode === 200 ? '200' : `${answer.statusCode} ${errorOf(answer).code}`)
    assert.deepEqual(refusedFirst.map((i) => statuses[i]), Array(5).fill('429 concurrency_limited'))
    assert.deepEqual(statuses.filter((status) => status === '200').length, 5)
  })
})
