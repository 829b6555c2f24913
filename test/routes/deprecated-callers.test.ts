// Who calls the deprecated operation (docs/OPERATING.md: The deprecated operation's
// callers), through the real HTTP interface on both configurations: calls on
// the public app, the app closed (which writes what it counted), then
// GET /admin/v1/deprecations on the admin API.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { DAY_MS } from '../../src/instant.js'
import { issueKey, type IssueKeyInput } from '../../src/keys/manage.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { RateLimitStore } from '../../src/limits/store.js'
import { CONFIGURATIONS, buildTestApp, type TestApp } from '../support/app.js'
import { bearer, buildPetRecord, CLOCK_START } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { openTestStore } from '../support/redis.js'

const ADMIN_TOKEN = 'adm-deprecated-7Rq2Zt5Wx1Kp8Lm3Vb6Hc9Nd4Fg0Js'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
/** An hour after CLOCK_START (2027-03-10T12:00:30Z). */
const BROWNOUT = '2027-03-10T13:00:00Z/2027-03-10T14:00:00Z'

interface Caller { key: { id: number, name: string }, calls: number, lastCall: string }
interface Operation { operationId: string, sunset: string, callerCount: number, callers: Caller[] }

for (const configuration of CONFIGURATIONS) {
  describe(`callers of the deprecated operation (${configuration.name})`, () => {
    let t: TestApp
    let storage: Storage
    let limiter: RateLimitStore
    let adminApp: FastifyInstance
    let appClosed = false

    beforeEach(async () => {
      storage = configuration.backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      limiter = configuration.limiterBackend === 'memory' ? new MemoryStore() : await openTestStore('single', { namespace: randomUUID() })
      t = await buildTestApp({ DEPRECATION_BROWNOUTS: BROWNOUT }, { storage, limiter })
      adminApp = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage, environment: t.config.environment }, now: t.clock.now })
      appClosed = false
    })
    afterEach(async () => {
      await adminApp.close()
      if (!appClosed) await t.app.close()
      await storage.close()
      await limiter.close()
    })

    const newKey = async (name: string, input: Partial<IssueKeyInput> = {}): Promise<{ id: number, token: string }> =>
      await issueKey(storage, { plan: 'pro', name, perMinute: undefined, perDay: undefined, environment: t.config.environment, now: t.clock.now(), ...input })
    const get = async (token: string, url: string): Promise<number> => (await t.app.inject({ url, headers: bearer(token) })).statusCode
    const deprecations = async (): Promise<Operation[]> => {
      const response = await adminApp.inject({ url: '/admin/v1/deprecations', headers: admin })
      assert.equal(response.statusCode, 200, response.body)
      return response.json<Operation[]>()
    }

    it('When keys call getPet (200, 404, a brownout\'s 410) or are refused before it (400, 403, 429), then after the app closes the callers are exactly the keys that reached it, with their calls and last call', async () => {
      // Arrange
      const pet = await storage.createPet(buildPetRecord({ name: 'Old', categoryId: 1n, status: 'sold' }))
      const caller = await newKey('caller')
      const lister = await newKey('lister')
      const writer = await newKey('writer', { scopes: ['pets:write'] })
      const once = await newKey('once', { plan: 'enterprise', perMinute: 1_000, perDay: 1 })

      // Act
      const statuses = [
        await get(caller.token, `/v1/pets/${pet.id}`),
        await get(caller.token, '/v1/pets/999999'),
        await get(caller.token, '/v1/pets/not-a-number'),
        await get(lister.token, '/v1/pets'),
        await get(writer.token, `/v1/pets/${pet.id}`),
        await get(once.token, `/v1/pets/${pet.id}`),
        await get(once.token, `/v1/pets/${pet.id}`),
        (await t.app.inject({ url: `/v1/pets/${pet.id}` })).statusCode
      ]
      t.clock.advance(3_600_000)
      const inBrownout = await get(caller.token, `/v1/pets/${pet.id}`)
      const lastCall = new Date(t.clock.now()).toISOString()
      const before = await deprecations()
      await t.app.close()
      appClosed = true
      const operations = await deprecations()

      // Assert
      assert.deepEqual(statuses, [200, 404, 400, 200, 403, 200, 429, 401])
      assert.equal(inBrownout, 410)
      assert.deepEqual(before.map((operation) => operation.callers), [[]], 'nothing is written before the first write')
      assert.equal(operations.length, 1)
      const [getPet] = operations as [Operation]
      assert.equal(getPet.operationId, 'getPet')
      assert.equal(getPet.sunset, '2030-12-05T00:00:00.000Z')
      assert.equal(getPet.callerCount, 2)
      assert.deepEqual(getPet.callers.map((c) => [c.key.name, c.calls]), [['caller', 3], ['once', 1]])
      assert.equal(getPet.callers[0]?.lastCall, lastCall)
      assert.equal(getPet.callers[1]?.lastCall, new Date(CLOCK_START).toISOString())
    })

    it('When a key called getPet 30 days ago and another 29 days ago, then only the second is listed: the last 30 days include today', async () => {
      // Arrange
      const old = await newKey('old')
      const recent = await newKey('recent')
      const pet = await storage.createPet(buildPetRecord({ name: 'Old', categoryId: 1n, status: 'sold' }))

      // Act
      t.clock.ms = CLOCK_START - 30 * DAY_MS
      const oldStatus = await get(old.token, `/v1/pets/${pet.id}`)
      t.clock.ms = CLOCK_START - 29 * DAY_MS
      const recentStatus = await get(recent.token, `/v1/pets/${pet.id}`)
      t.clock.ms = CLOCK_START
      await t.app.close()
      appClosed = true
      const [getPet] = await deprecations()

      // Assert
      assert.deepEqual([oldStatus, recentStatus], [200, 200])
      assert.deepEqual(getPet?.callers.map((c) => [c.key.name, c.calls]), [['recent', 1]])
    })
  })
}
