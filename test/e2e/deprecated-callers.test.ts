// Who still calls the deprecated operation, in real processes (docs/OPERATING.md:
// The deprecated operation's callers): 50 keys, some of them calling getPet,
// their requests split over two instances on one PostgreSQL database and one
// Redis (or over two workers of one instance); the admin API and
// `petstore keys list --calls-deprecated` list exactly the keys that called it,
// with exact counts, once every instance has written what it counted.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sharesPorts } from '../../src/config.js'
import { openStorage } from '../../src/db/open.js'
import { issueKey } from '../../src/keys/manage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { bearer, buildPetRecord } from '../support/fixtures.js'
import { makeTempDir, pollUntil, removeTempDir, runCliOk, sqliteUrl, startServer, startServers, type ServerProcess } from '../support/process.js'
import { OwnRedisServer } from '../support/redis.js'

const ADMIN_TOKEN = 'deprecated-e2e-4Wq9Zx2Rt7Kp1Lm6Vb3Hc8Nd5Fg0J'
const FLUSH_MS = 500
const REQUEST_TIMEOUT_MS = 10_000
const KEYS = 50

interface Operation { operationId: string, callerCount: number, callers: Array<{ key: { id: number }, calls: number, lastCall: string }> }

async function adminApi (server: ServerProcess): Promise<string> {
  const pattern = /"adminApi":"(http:\/\/[^"]+)"/
  await server.waitForStdout((stdout) => pattern.test(stdout), 15_000, 'the admin API address')
  return pattern.exec(server.stdout)?.[1] as string
}

async function callersOfGetPet (api: string): Promise<Map<number, number>> {
  const response = await fetch(`${api}/deprecations`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  assert.equal(response.status, 200)
  const operations = await response.json() as Operation[]
  const getPet = operations.find((operation) => operation.operationId === 'getPet')
  assert.ok(getPet !== undefined)
  assert.equal(getPet.callerCount, getPet.callers.length)
  return new Map(getPet.callers.map((caller) => [caller.key.id, caller.calls]))
}

async function status (origin: string, token: string, path: string): Promise<number> {
  const response = await fetch(`${origin}/v1${path}`, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  await response.arrayBuffer()
  return response.status
}

/**
 * 50 keys; every third calls getPet (1 to 4 times, on an animal that exists
 * or not), and every key lists animals twice. Requests alternate between
 * `origins`. Gives the calls of getPet each calling key made.
 */
async function mixedLoad (databaseUrl: string, origins: readonly string[]): Promise<Map<number, number>> {
  const storage = await openStorage(databaseUrl, { poolSize: 2 })
  const keys = []
  let petId: bigint
  try {
    for (let i = 0; i < KEYS; i++) keys.push(await issueKey(storage, { plan: 'pro', name: `client-${i}`, perMinute: undefined, perDay: undefined, environment: 'production', now: Date.now() }))
    petId = (await storage.createPet(buildPetRecord({ name: 'Old', categoryId: 1n, status: 'sold' }))).id
  } finally {
    await storage.close()
  }
  const expected = new Map<number, number>()
  let turn = 0
  const origin = (): string => origins[turn++ % origins.length] as string
  await Promise.all(keys.map(async (key, i) => {
    const requests = [status(origin(), key.token, '/pets?limit=1'), status(origin(), key.token, '/pets?limit=1')]
    if (i % 3 === 0) {
      const calls = (i % 4) + 1
      expected.set(key.id, calls)
      for (let c = 0; c < calls; c++) requests.push(status(origin(), key.token, c % 2 === 0 ? `/pets/${petId}` : '/pets/999999'))
    }
    const statuses = await Promise.all(requests)
    assert.ok(statuses.every((s) => s === 200 || s === 404), `key ${i}: ${statuses.join(', ')}`)
  }))
  return expected
}

describe('the deprecated operation\'s callers, counted by real instances', { timeout: 180_000 }, () => {
  const servers: ServerProcess[] = []
  let redis: OwnRedisServer | undefined
  const dir = makeTempDir()
  const workersDir = makeTempDir()
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await redis?.stop()
    removeTempDir(dir)
    removeTempDir(workersDir)
  })

  it('When 50 keys, some calling getPet, are split over two instances, then the callers are exactly those keys with exact counts, in the admin API and in `keys list --calls-deprecated`', async (t) => {
    // Arrange
    redis = await OwnRedisServer.start()
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: redis.url, DATABASE_POOL_SIZE: '4', ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: String(FLUSH_MS) }
    const pair = await startServers(2, env)
    servers.push(...pair)
    const api = await adminApi(pair[0] as ServerProcess)

    // Act
    const expected = await mixedLoad(env.DATABASE_URL, pair.map((server) => server.origin))
    // Both instances write every FLUSH_MS while they run.
    const written = await pollUntil(async () => {
      const now = await callersOfGetPet(api)
      return [...now.values()].reduce((a, b) => a + b, 0) === [...expected.values()].reduce((a, b) => a + b, 0) ? now : undefined
    }, { ms: 20_000, every: 100, what: 'both instances to write their calls' })
    await Promise.all(pair.map(async (server) => await server.stop()))
    const json = JSON.parse((await runCliOk(['keys', 'list', '--calls-deprecated', '--json'], env)).stdout) as Array<{ id: number, name: string, deprecatedCalls: Array<{ operationId: string, calls: number }> }>
    const table = (await runCliOk(['keys', 'list', '--calls-deprecated'], env)).stdout

    // Assert
    const sorted = (map: Map<number, number>): Array<[number, number]> => [...map.entries()].sort((a, b) => a[0] - b[0])
    assert.equal(expected.size, 17)
    assert.deepEqual(sorted(written), sorted(expected))
    assert.deepEqual(sorted(new Map(json.map((key) => [key.id, key.deprecatedCalls[0]?.calls ?? 0]))), sorted(expected), 'stopping wrote nothing twice')
    assert.ok(json.every((key) => key.deprecatedCalls.length === 1 && key.deprecatedCalls[0]?.operationId === 'getPet'))
    const rows = table.trim().split('\n')
    assert.match(rows[0] ?? '', /^\s*ID\s+NAME\s+PLAN\s+TOKEN\s+REVOKED\s+OPERATION\s+SUNSET\s+CALLS\s+LAST CALL$/)
    assert.equal(rows.length, 1 + expected.size)
    for (const [id, calls] of expected) {
      assert.ok(rows.some((row) => new RegExp(`^\\s*${id}\\s+client-\\d+\\s+pro\\s+.*\\s+getPet\\s+2030-12-05T00:00:00\\.000Z\\s+${calls}\\s+\\d{4}-`).test(row)), `key ${id} in\n${table}`)
    }
    t.diagnostic(`${expected.size} of ${KEYS} keys called getPet ${[...expected.values()].reduce((a, b) => a + b, 0)} times over 2 instances`)
  })

  it('When no key called a deprecated operation, then `keys list --calls-deprecated` says so, and prints [] with --json', async () => {
    const env = { DATABASE_URL: sqliteUrl(dir) }
    await runCliOk(['keys', 'create', '--plan', 'free'], env)

    const table = await runCliOk(['keys', 'list', '--calls-deprecated'], env)
    const json = await runCliOk(['keys', 'list', '--calls-deprecated', '--json'], env)

    assert.equal(table.stdout, 'No key called a deprecated operation in the last 30 days.\n')
    assert.equal(json.stdout, '[]\n')
  })

  it('When 50 keys, some calling getPet, are split over two workers of one instance on SQLite, then the callers are exactly those keys with exact counts', {
    skip: !sharesPorts(process.versions.node) && 'this Node.js cannot share a port between threads'
  }, async () => {
    const env = { DATABASE_URL: sqliteUrl(workersDir), WORKERS: '2', ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: String(FLUSH_MS) }
    const server = await startServer(env)
    servers.push(server)

    const expected = await mixedLoad(env.DATABASE_URL, [server.origin])
    await server.stop()
    const restarted = await startServer(env)
    servers.push(restarted)
    const written = await callersOfGetPet(await adminApi(restarted))
    await restarted.stop()

    assert.deepEqual([...written.entries()].sort((a, b) => a[0] - b[0]), [...expected.entries()].sort((a, b) => a[0] - b[0]))
  })
})
