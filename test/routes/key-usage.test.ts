// Usage per key and UTC day (docs/OPERATING.md: Usage), through the
// real HTTP interface on both configurations: requests on the public app,
// the app closed (which writes what it counted), then the report on the
// admin API and the requests by plan in the metrics.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { STANDING_PER_MINUTE } from '../../src/limits/limit.js'
import { buildAdminApp } from '../../src/http/admin.js'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { issueKey, type IssueKeyInput } from '../../src/keys/manage.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { RateLimitStore } from '../../src/limits/store.js'
import { createMetrics } from '../../src/telemetry/metrics.js'
import { CONFIGURATIONS, buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPet } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { awayFromMinuteEdge, openTestStore } from '../support/redis.js'

const ADMIN_TOKEN = 'adm-usage-3Hq8Zt1Wx6Kp9Lm2Vb5Rc7Nd0Fg4Js'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

interface Day { date: string, admitted: number, refused: number }

for (const configuration of CONFIGURATIONS) {
  describe(`usage per key and day (${configuration.name})`, () => {
    let t: TestApp
    let storage: Storage
    let limiter: RateLimitStore
    let adminApp: FastifyInstance
    let appClosed = false

    beforeEach(async () => {
      storage = configuration.backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      limiter = configuration.limiterBackend === 'memory' ? new MemoryStore() : await openTestStore('single', { namespace: randomUUID() })
      const metrics = createMetrics({ limiter, poolUse: () => storage.poolUse(), droppedLogLines: () => 0 })
      t = await buildTestApp({}, { storage, limiter, metrics })
      adminApp = await buildAdminApp({ metrics, api: { token: ADMIN_TOKEN, storage, environment: t.config.environment }, now: t.clock.now })
      appClosed = false
    })
    afterEach(async () => {
      await adminApp.close()
      if (!appClosed) await t.app.close()
      await storage.close()
      await limiter.close()
    })

    const newKey = async (input: Partial<IssueKeyInput> = {}): Promise<{ id: number, token: string }> =>
      await issueKey(storage, { plan: 'pro', name: 'usage', perMinute: undefined, perDay: undefined, environment: t.config.environment, now: t.clock.now(), ...input })
    const get = async (token: string, url: string): Promise<number> => (await t.app.inject({ url, headers: bearer(token) })).statusCode
    /** Closes the public app, as a stopping instance does: what it counted is written. */
    const stop = async (): Promise<void> => {
      await t.app.close()
      appClosed = true
    }
    const report = async (id: number, query = ''): Promise<Day[]> => {
      const response = await adminApp.inject({ url: `/admin/v1/keys/${id}/usage${query}`, headers: admin })
      assert.equal(response.statusCode, 200, response.body)
      return response.json<Day[]>()
    }
    const scrape = async (): Promise<string> => (await adminApp.inject({ url: '/metrics' })).body

    it('When a key is served, answered 403 and 404, and refused, then after the app closes its report shows each as admitted or refused today, and its last use is the last admitted request', async () => {
      // Arrange: five a day, read only. The day window, not the minute's: the Redis store keeps its minutes on its own clock.
      const key = await newKey({ plan: 'enterprise', perMinute: 1_000, perDay: 5, scopes: ['pets:read'] })
      const lastAdmittedAt = t.clock.now() + 4_000

      // Act
      const statuses = [await get(key.token, '/v1/pets')]
      t.clock.advance(1_000)
      statuses.push(await get(key.token, '/v1/pets/999999'))
      t.clock.advance(1_000)
      statuses.push((await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(key.token), payload: JSON.stringify(buildPet()) })).statusCode)
      t.clock.advance(1_000)
      statuses.push(await get(key.token, '/v1/no/such/thing'))
      t.clock.advance(1_000)
      statuses.push(await get(key.token, '/v1/pets'))
      for (let i = 0; i < 3; i++) {
        t.clock.advance(1_000)
        statuses.push(await get(key.token, '/v1/pets'))
      }
      await stop()
      const days = await report(key.id)
      const shown = await adminApp.inject({ url: `/admin/v1/keys/${key.id}`, headers: admin })

      // Assert
      assert.deepEqual(statuses, [200, 404, 403, 404, 200, 429, 429, 429])
      assert.equal(days.length, 30, 'the last 30 days by default')
      assert.deepEqual(days.at(-1), { date: '2027-03-10', admitted: 5, refused: 3 })
      assert.ok(days.slice(0, -1).every((day) => day.admitted === 0 && day.refused === 0), 'the days before are there, with zeros')
      assert.equal(days[0]?.date, '2027-02-09')
      assert.equal(shown.json<{ lastUsedAt: string | null }>().lastUsedAt, new Date(lastAdmittedAt).toISOString(), 'refusals are no use')
    })

    it('When requests come with no key, an unknown one or a revoked one, then no key counts them, and the metrics count none', async () => {
      // Arrange
      const key = await newKey()
      const revoked = await newKey()
      await adminApp.inject({ method: 'DELETE', url: `/admin/v1/keys/${revoked.id}`, headers: admin })
      t.clock.advance(1_000) // past the lookup cache

      // Act
      const statuses = [
        (await t.app.inject({ url: '/v1/pets' })).statusCode,
        await get('pet_live_not-a-key', '/v1/pets'),
        await get(revoked.token, '/v1/pets')
      ]
      await stop()

      // Assert
      assert.deepEqual(statuses, [401, 401, 401])
      for (const id of [key.id, revoked.id]) {
        assert.deepEqual((await report(id)).filter((day) => day.admitted + day.refused > 0), [], `key ${id}`)
      }
      assert.doesNotMatch(await scrape(), /^petstore_key_requests_total\{/m)
    })

    it('When keys of two plans are used, then the metrics count their requests by plan and outcome, never by key', async () => {
      // Arrange
      const free = await newKey({ plan: 'free' })
      const enterprise = await newKey({ plan: 'enterprise', perMinute: 1_000, perDay: 2 })

      // Act
      for (let i = 0; i < 3; i++) await get(free.token, '/v1/pets')
      for (let i = 0; i < 4; i++) await get(enterprise.token, '/v1/pets')
      const text = await scrape()

      // Assert
      const series = text.split('\n').filter((line) => line.startsWith('petstore_key_requests_total{')).sort()
      assert.deepEqual(series, [
        'petstore_key_requests_total{plan="enterprise",outcome="admitted"} 2',
        'petstore_key_requests_total{plan="enterprise",outcome="refused"} 2',
        'petstore_key_requests_total{plan="free",outcome="admitted"} 3'
      ])
    })

    it('When a key asks GET /v1/rate_limit, then each question is counted as admitted, though it spends no quota; past its own cap, as refused', async () => {
      // Arrange: the cap's minute is the Redis store's, on the real clock.
      const key = await newKey()
      await awayFromMinuteEdge(10_000)

      // Act
      const statuses: number[] = []
      for (let i = 0; i < STANDING_PER_MINUTE + 1; i++) statuses.push(await get(key.token, '/v1/rate_limit'))
      await stop()

      // Assert
      assert.deepEqual([...new Set(statuses.slice(0, -1))], [200])
      assert.equal(statuses.at(-1), 429)
      assert.deepEqual((await report(key.id)).at(-1), { date: '2027-03-10', admitted: STANDING_PER_MINUTE, refused: 1 })
    })

    it('When a range is asked for, then one row per day of it comes, and a bad range is 400 with details', async () => {
      // Arrange
      const key = await newKey()
      await get(key.token, '/v1/pets')
      await stop()

      // Act
      const range = await report(key.id, '?from=2027-03-09&to=2027-03-11')
      const backwards = await adminApp.inject({ url: `/admin/v1/keys/${key.id}/usage?from=2027-03-11&to=2027-03-09`, headers: admin })
      const tooLong = await adminApp.inject({ url: `/admin/v1/keys/${key.id}/usage?from=2026-01-01&to=2027-03-10`, headers: admin })
      const noKey = await adminApp.inject({ url: '/admin/v1/keys/999999/usage', headers: admin })

      // Assert
      assert.deepEqual(range, [
        { date: '2027-03-09', admitted: 0, refused: 0 },
        { date: '2027-03-10', admitted: 1, refused: 0 },
        { date: '2027-03-11', admitted: 0, refused: 0 }
      ])
      assert.equal(backwards.statusCode, 400)
      assert.equal(tooLong.statusCode, 400)
      assert.ok(Array.isArray(tooLong.json<{ details?: unknown[] }>().details))
      assert.equal(noKey.statusCode, 404)
    })
  })
}
