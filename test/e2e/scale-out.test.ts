// Several instances of the service on one PostgreSQL database and one
// Redis, as behind a load balancer, and what they do when PostgreSQL or
// Redis goes away. The figures
// (how long an outage was seen, how long recovery took) are printed as test
// diagnostics.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import pg from 'pg'
import { PostgresCluster } from '../support/postgres-cluster.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { createKey, idsIn, pollUntil, runCliOk, startServer, type ServerProcess } from '../support/process.js'
import { OwnRedisServer } from '../support/redis.js'

const REQUEST_TIMEOUT_MS = 10_000
/** DECISIONS §6: a database not answering within 5 s is a 503; this much more for a busy test machine. */
const UNAVAILABLE_WITHIN_MS = 5_000 + 1_500

async function send (server: ServerProcess, path: string, init: RequestInit = {}): Promise<{ status: number, text: string, retryAfter: string | null, ms: number }> {
  const started = Date.now()
  const response = await fetch(`${server.origin}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  return { status: response.status, text: await response.text(), retryAfter: response.headers.get('retry-after'), ms: Date.now() - started }
}

async function countRows (databaseUrl: string, sql: string, values: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ count: string }>(sql, values)
    return Number(rows[0]?.count)
  } finally {
    await client.end()
  }
}

describe('several instances on one PostgreSQL database', { timeout: 120_000 }, () => {
  const servers: ServerProcess[] = []
  after(async () => { await Promise.all(servers.map(async (server) => await server.dispose())) })

  it('When five instances start at the same moment on an empty database, then all come up and answer', async () => {
    // Arrange
    const env = { DATABASE_URL: await freshPostgresDatabase(), DATABASE_POOL_SIZE: '3' }

    // Act
    const started = await Promise.all(Array.from({ length: 5 }, async () => await startServer(env, 30_000)))
    servers.push(...started)
    const ready = await Promise.all(started.map(async (server) => (await send(server, '/readyz')).status))

    // Assert
    assert.deepEqual(ready, [200, 200, 200, 200, 200])
    await Promise.all(started.map(async (server) => await server.stop()))
  })

  it('When one Idempotency-Key is sent to two instances at the same moment, then one animal is created and both get it', async (t) => {
    // Arrange
    const databaseUrl = await freshPostgresDatabase()
    const env = { DATABASE_URL: databaseUrl }
    const { token } = await createKey(env, ['--plan', 'enterprise', '--name', 'twice', '--per-minute', '100000', '--per-day', '1000000'])
    const pair = await Promise.all([startServer(env), startServer(env)])
    servers.push(...pair)
    const attempts = 20

    // Act: each key sent to both instances at once.
    const outcomes = await Promise.all(Array.from({ length: attempts }, async (_, i) => {
      const init = {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': `race-${i}` },
        body: newPetJson({ name: `race-${i}` })
      }
      return await Promise.all(pair.map(async (server) => await send(server, '/v1/pets', init)))
    }))

    // Assert
    for (const [i, [first, second]] of outcomes.entries()) {
      assert.deepEqual([first?.status, second?.status], [201, 201], `${first?.text} / ${second?.text}`)
      assert.deepEqual(idsIn(first?.text ?? ''), idsIn(second?.text ?? ''), `key race-${i} created two animals`)
    }
    const stored = await countRows(databaseUrl, "SELECT count(*) FROM pets WHERE name LIKE 'race-%'", [])
    assert.equal(stored, attempts)
    t.diagnostic(`${attempts} keys, each sent to 2 instances at once: ${stored} animals stored`)
    await Promise.all(pair.map(async (server) => await server.stop()))
  })
})

describe('an instance while its PostgreSQL server stops or freezes', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-pg-outage-'))
  let cluster: PostgresCluster | undefined
  let server: ServerProcess | undefined
  let token = ''
  after(async () => {
    await server?.dispose()
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** The cluster, the service on it and a key, before each outage. */
  async function arrange (): Promise<{ cluster: PostgresCluster, server: ServerProcess, headers: Record<string, string> }> {
    if (cluster === undefined) cluster = await PostgresCluster.start({ dir })
    if (server === undefined) {
      const env = { DATABASE_URL: cluster.url }
      token = (await createKey(env, ['--plan', 'enterprise', '--name', 'outage', '--per-minute', '100000', '--per-day', '1000000'])).token
      server = await startServer(env)
    }
    assert.equal((await send(server, '/readyz')).status, 200)
    return { cluster, server, headers: { ...bearer(token), 'content-type': 'application/json' } }
  }

  /** Polls a write until it succeeds again; the time it took. */
  async function recovery (running: ServerProcess, headers: Record<string, string>): Promise<number> {
    const from = Date.now()
    await pollUntil(async () => {
      const created = await send(running, '/v1/pets', { method: 'POST', headers, body: newPetJson({ name: 'back' }) })
      return created.status === 201 ? true : undefined
    }, { ms: 30_000, every: 100, what: 'writes to succeed again' })
    return Date.now() - from
  }

  it('When PostgreSQL is stopped with -m immediate, then requests get 503 with Retry-After at once, /readyz 503, and writes succeed again once it is back', async (t) => {
    // Arrange
    const { cluster: db, server: running, headers } = await arrange()

    // Act
    db.signal('SIGQUIT')
    await db.exited()
    const during = await send(running, '/v1/pets', { method: 'POST', headers, body: newPetJson({ name: 'during' }) })
    const readyDuring = await send(running, '/readyz')
    const downFor = Date.now()
    await db.resume()
    const restartMs = Date.now() - downFor
    const recoveredMs = await recovery(running, headers)

    // Assert
    assert.equal(during.status, 503, during.text)
    assert.match(during.text, /"code":"service_unavailable"/)
    assert.ok(Number(during.retryAfter) >= 1, `Retry-After: ${during.retryAfter}`)
    assert.ok(during.ms < UNAVAILABLE_WITHIN_MS, `the 503 took ${during.ms} ms`)
    assert.equal(readyDuring.status, 503)
    assert.equal((await send(running, '/readyz')).status, 200)
    t.diagnostic(`stopped: 503 after ${during.ms} ms; PostgreSQL back after ${restartMs} ms; writes succeeded ${recoveredMs} ms after that`)
  })

  it('When PostgreSQL is frozen (SIGSTOP), then requests get 503 with Retry-After within 5 s, /readyz 503, and writes succeed again once it is thawed', async (t) => {
    // Arrange
    const { cluster: db, server: running, headers } = await arrange()

    // Act
    db.freeze()
    const during = await send(running, '/v1/pets', { method: 'POST', headers, body: newPetJson({ name: 'frozen' }) })
    const readyDuring = await send(running, '/readyz')
    db.thaw()
    const recoveredMs = await recovery(running, headers)

    // Assert
    assert.equal(during.status, 503, during.text)
    assert.ok(Number(during.retryAfter) >= 1, `Retry-After: ${during.retryAfter}`)
    assert.ok(during.ms >= 4_000 && during.ms < UNAVAILABLE_WITHIN_MS, `the 503 took ${during.ms} ms`)
    assert.equal(readyDuring.status, 503)
    assert.equal((await send(running, '/readyz')).status, 200)
    t.diagnostic(`frozen: 503 after ${during.ms} ms, /readyz 503 after ${readyDuring.ms} ms; writes succeeded ${recoveredMs} ms after the thaw`)
  })
})

describe('several instances on one PostgreSQL database and one Redis', { timeout: 180_000 }, () => {
  const servers: ServerProcess[] = []
  let redis: OwnRedisServer | undefined
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await redis?.stop()
  })

  /** Instances sharing a fresh database and this describe's own Redis, and an enterprise key with these limits. */
  async function arrange (count: number, perMinute: number, extraEnv: Record<string, string> = {}): Promise<{ instances: ServerProcess[], token: string, keyId: number, env: Record<string, string> }> {
    redis ??= await OwnRedisServer.start()
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: redis.url, DATABASE_POOL_SIZE: '4', ...extraEnv }
    const key = await createKey(env, ['--plan', 'enterprise', '--name', 'shared', '--per-minute', String(perMinute), '--per-day', '1000000'])
    const instances = await Promise.all(Array.from({ length: count }, async () => await startServer(env)))
    servers.push(...instances)
    // A minute window that ends during the test would admit a second quota.
    const toNextMinute = 60_000 - (Date.now() % 60_000)
    if (toNextMinute < 10_000) await delay(toNextMinute + 200)
    return { instances, token: key.token, keyId: key.id, env }
  }

  it('When concurrent requests are split over three instances, then exactly the per-minute limit is admitted', async (t) => {
    // Arrange
    const limit = 50
    const sent = 240
    const { instances, token } = await arrange(3, limit)

    // Act
    const statuses = await Promise.all(Array.from({ length: sent }, async (_, i) =>
      (await send(instances[i % instances.length] as ServerProcess, '/v1/pets?limit=1', { headers: bearer(token) })).status))

    // Assert
    const admitted = statuses.filter((status) => status === 200).length
    assert.equal(admitted, limit)
    assert.equal(statuses.filter((status) => status === 429).length, sent - limit)
    t.diagnostic(`${sent} concurrent requests over 3 instances, limit ${limit} a minute: ${admitted} admitted`)
  })

  it('When a key keeps sending after 429 through two instances, then a third bans it too; a revocation reaches every instance within one second', async () => {
    // Arrange
    const { instances, token, keyId, env } = await arrange(3, 1, { RATE_LIMIT_BAN_THRESHOLD: '3' })
    const [a, b, c] = instances as [ServerProcess, ServerProcess, ServerProcess]
    assert.equal((await send(a, '/v1/pets?limit=1', { headers: bearer(token) })).status, 200)

    // Act
    for (const server of [a, b, a]) assert.equal((await send(server, '/v1/pets?limit=1', { headers: bearer(token) })).status, 429)
    const onThird = await send(c, '/v1/pets?limit=1', { headers: bearer(token) })
    const fresh = await createKey(env, ['--plan', 'free', '--name', 'to revoke'])
    await runCliOk(['keys', 'revoke', String(fresh.id)], env)
    const revokedAt = Date.now()
    const refusedIn = await Promise.all([a, b, c].map(async (server) => {
      await pollUntil(async () => (await send(server, '/v1/pets?limit=1', { headers: bearer(fresh.token) })).status === 401 ? true : undefined,
        { ms: 3_000, every: 50, what: 'the revoked key to be refused' })
      return Date.now() - revokedAt
    }))

    // Assert
    assert.equal(onThird.status, 429)
    assert.match(onThird.text, /"code":"api_key_banned"/)
    assert.ok(keyId > 0)
    for (const ms of refusedIn) assert.ok(ms < 1_000, `refused after ${ms} ms`)
  })

  it('When Redis is killed and then restarted, or frozen and then resumed, then every request is answered within a second, limits still hold, /readyz names the degradation, and the instance goes back to Redis', async (t) => {
    // Arrange: bans out of the way, so that the refusals only show the limit.
    const limit = 30
    const { instances, token } = await arrange(1, limit, { RATE_LIMIT_BAN_THRESHOLD: '1000' })
    const server = instances[0] as ServerProcess
    const own = redis as OwnRedisServer
    const slowest = { ms: 0 }
    const load = async (count: number): Promise<number[]> => await Promise.all(Array.from({ length: count }, async () => {
      const answer = await send(server, '/v1/pets?limit=1', { headers: bearer(token) })
      slowest.ms = Math.max(slowest.ms, answer.ms)
      return answer.status
    }))
    const readiness = async (): Promise<string> => (JSON.parse((await send(server, '/readyz')).text) as { status: string }).status
    const backOnRedis = async (): Promise<number> => {
      const from = Date.now()
      await pollUntil(async () => await readiness() === 'ok' ? true : undefined, { ms: 15_000, every: 50, what: 'the instance to go back to Redis' })
      return Date.now() - from
    }

    // Act: killed.
    await own.kill()
    const whileKilled = await load(limit + 10)
    const readyKilled = await readiness()
    await own.restart()
    const backAfterRestartMs = await backOnRedis()
    // Act: frozen.
    own.freeze()
    const whileFrozen = await load(20)
    const readyFrozen = await readiness()
    own.thaw()
    const backAfterThawMs = await backOnRedis()
    const afterwards = await load(5)

    // Assert
    // In-process, the instance admits exactly its limit, and goes on refusing in the same minute.
    assert.equal(whileKilled.filter((status) => status === 200).length, limit)
    assert.equal(whileKilled.filter((status) => status === 429).length, 10)
    assert.ok(whileFrozen.every((status) => status === 429), String(whileFrozen))
    // Back on Redis, which restarted empty: the key has room again.
    assert.ok(afterwards.every((status) => status === 200), String(afterwards))
    assert.equal(readyKilled, 'degraded')
    assert.equal(readyFrozen, 'degraded')
    assert.ok(slowest.ms < 1_000, `a request took ${slowest.ms} ms`)
    t.diagnostic(`Redis killed, then frozen: slowest request ${slowest.ms} ms; ${limit} of ${limit + 10} admitted in-process (limit ${limit}); back on Redis ${backAfterRestartMs} ms after the restart, ${backAfterThawMs} ms after the thaw`)
  })
})
