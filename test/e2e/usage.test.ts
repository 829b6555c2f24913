// Usage counts in real processes (docs/OPERATING.md: Usage): exact
// across two instances on one PostgreSQL database and one Redis, and what a
// `kill -9` may take of them: at most the counts since the instance's last
// write, which it starts every USAGE_FLUSH_MS.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { freshPostgresDatabase } from '../support/postgres.js'
import { bearer } from '../support/fixtures.js'
import { createUnlimitedKey } from '../support/load.js'
import { createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl, startServer, startServers, type ServerProcess } from '../support/process.js'
import { OwnRedisServer } from '../support/redis.js'

const ADMIN_TOKEN = 'usage-e2e-8Tq3Zw1Rx6Kp9Lm2Vb5Hc7Nd0Fg4J'
/** Short, so that the tests see several writes; the service allows 100 to 10000 ms. */
const FLUSH_MS = 500
const REQUEST_TIMEOUT_MS = 10_000

interface Day { date: string, admitted: number, refused: number }

/** The admin API's address, from the line the service logs once it listens. */
async function adminApi (server: ServerProcess): Promise<string> {
  const pattern = /"adminApi":"(http:\/\/[^"]+)"/
  await server.waitForStdout((stdout) => pattern.test(stdout), 15_000, 'the admin API address')
  return pattern.exec(server.stdout)?.[1] as string
}

/** A key's admitted and refused requests over the report's default 30 days: a test that runs across UTC midnight has them on two days. */
async function totals (api: string, keyId: number): Promise<{ admitted: number, refused: number }> {
  const response = await fetch(`${api}/keys/${keyId}/usage`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  assert.equal(response.status, 200)
  const days = await response.json() as Day[]
  return days.reduce((sum, day) => ({ admitted: sum.admitted + day.admitted, refused: sum.refused + day.refused }), { admitted: 0, refused: 0 })
}

async function status (server: ServerProcess, token: string): Promise<number> {
  const response = await fetch(`${server.origin}/v1/pets?limit=1`, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  await response.arrayBuffer()
  return response.status
}

describe('usage counted by real instances', { timeout: 120_000 }, () => {
  const servers: ServerProcess[] = []
  let redis: OwnRedisServer | undefined
  const dir = makeTempDir()
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await redis?.stop()
    removeTempDir(dir)
  })

  it('When requests of two keys are split over two instances, then the report shows exactly as many admitted and refused as were answered, once written and again after both stop', async (t) => {
    // Arrange: one key that is never refused; one whose day allows 10, shared in Redis by both instances.
    redis = await OwnRedisServer.start()
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: redis.url, DATABASE_POOL_SIZE: '4', ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: String(FLUSH_MS) }
    const open = await createUnlimitedKey(env, 'open')
    const small = await createKey(env, ['--plan', 'enterprise', '--name', 'small', '--per-minute', '1000', '--per-day', '10'])
    const pair = await startServers(2, env)
    servers.push(...pair)
    const api = await adminApi(pair[0] as ServerProcess)
    const sent = { open: 200, small: 30 }

    // Act
    const [openStatuses, smallStatuses] = await Promise.all([open, small].map(async (key, k) =>
      await Promise.all(Array.from({ length: k === 0 ? sent.open : sent.small }, async (_, i) => await status(pair[i % 2] as ServerProcess, key.token)))))
    const expected = (statuses: number[] | undefined): { admitted: number, refused: number } =>
      ({ admitted: (statuses ?? []).filter((s) => s === 200).length, refused: (statuses ?? []).filter((s) => s === 429).length })
    // Both instances write every FLUSH_MS while they run, with no request needed to prompt them.
    const written = await pollUntil(async () => {
      const now = await Promise.all([open.id, small.id].map(async (id) => await totals(api, id)))
      return now[0]?.admitted === sent.open && (now[1]?.admitted ?? 0) + (now[1]?.refused ?? 0) === sent.small ? now : undefined
    }, { ms: 20_000, every: 100, what: 'both instances to write their counts' })
    await Promise.all(pair.map(async (server) => await server.stop()))
    const restarted = await startServer(env)
    servers.push(restarted)
    const afterStop = await Promise.all([open.id, small.id].map(async (id) => await totals(await adminApi(restarted), id)))

    // Assert
    assert.deepEqual(expected(openStatuses), { admitted: sent.open, refused: 0 })
    assert.deepEqual(expected(smallStatuses), { admitted: 10, refused: sent.small - 10 })
    assert.deepEqual(written, [expected(openStatuses), expected(smallStatuses)])
    assert.deepEqual(afterStop, written, 'stopping wrote nothing twice')
    t.diagnostic(`${sent.open} + ${sent.small} requests over 2 instances: reported ${JSON.stringify(written)}`)
    await restarted.stop()
  })

  it(`When an instance is killed with SIGKILL under steady load, then it lost at most the counts answered in the last ${FLUSH_MS} ms before the kill, plus a margin`, async (t) => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: String(FLUSH_MS), LOG_LEVEL: 'warn' }
    const key = await createUnlimitedKey(env, 'killed')
    const server = await startServer({ ...env, LOG_LEVEL: 'info' })
    servers.push(server)
    /** When each 200 reached the client: its request was counted before its answer was written. */
    const answeredAt: number[] = []
    let inFlight = 0
    const load = { stopped: false }
    const clients = Array.from({ length: 4 }, async () => {
      while (!load.stopped) {
        inFlight++
        try {
          if (await status(server, key.token) === 200) answeredAt.push(Date.now())
        } catch {
          return // the instance is gone
        } finally {
          inFlight--
        }
      }
    })

    // Act: twelve write intervals of load, then the kill.
    await new Promise((resolve) => setTimeout(resolve, 12 * FLUSH_MS))
    const inFlightAtKill = inFlight
    const killedAt = Date.now()
    server.signal('SIGKILL')
    const exit = await server.waitForExit(5_000)
    load.stopped = true
    await Promise.all(clients)
    const restarted = await startServer({ ...env, LOG_LEVEL: 'info' })
    servers.push(restarted)
    const stored = await totals(await adminApi(restarted), key.id)
    await restarted.stop()

    // Assert
    // Every request answered before the cutoff was counted before it, so it
    // was taken by a write that started before it; writes start every
    // FLUSH_MS, so the one after it started by cutoff + FLUSH_MS plus the
    // instance's own lag, and committed before the kill unless the lag and the
    // write together took longer than MARGIN_MS. The test's own delays only
    // move its clock readings later, which loosens the check, never tightens it.
    const MARGIN_MS = 2_000
    const cutoff = killedAt - FLUSH_MS - MARGIN_MS
    const answeredBeforeCutoff = answeredAt.filter((at) => at <= cutoff).length
    t.diagnostic(`${answeredAt.length} answered, ${inFlightAtKill} in flight at the kill; ${stored.admitted} stored; ` +
      `${answeredBeforeCutoff} answered more than ${FLUSH_MS} + ${MARGIN_MS} ms before the kill`)
    assert.equal(exit.signal, 'SIGKILL')
    assert.ok(answeredBeforeCutoff > 0, 'the load ran long enough for the check to mean something')
    assert.ok(stored.admitted >= answeredBeforeCutoff, `${stored.admitted} stored, fewer than the ${answeredBeforeCutoff} answered before the cutoff`)
    assert.ok(stored.admitted <= answeredAt.length + inFlightAtKill, `${stored.admitted} stored, more than were answered or in flight`)
    assert.equal(stored.refused, 0)
  })
})
