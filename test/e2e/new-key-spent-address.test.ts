// A valid key works from any address the instant its creation is answered,
// even from an address that has spent its keyless limit (docs/SECURITY.md):
// the per-address limit is for requests without a valid key. Over real
// HTTP, on SQLite with one instance, and on PostgreSQL + Redis with two
// instances that share the address's count.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { ANONYMOUS_PER_MINUTE } from '../../src/limits/plans.js'
import { bearer } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'
import { testRedisUrl } from '../support/redis.js'

const ADMIN_TOKEN = randomBytes(32).toString('base64url')
const REQUEST_TIMEOUT_MS = 5_000

async function status (server: ServerProcess, token?: string): Promise<{ status: number, code: string | undefined }> {
  const response = await fetch(`${server.origin}/v1/pets?limit=1`, {
    headers: token === undefined ? {} : bearer(token),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  const body = await response.json() as { code?: string }
  return { status: response.status, code: body.code }
}

/**
 * Keyless requests until the address is refused: its keyless limit is spent.
 * Up to twice the limit, since a minute that ends midway starts the count again.
 */
async function spendAddress (server: ServerProcess): Promise<void> {
  for (let i = 0; i < 2 * (ANONYMOUS_PER_MINUTE + 1); i++) {
    if ((await status(server)).status === 429) return
  }
  assert.equal((await status(server)).status, 429, 'the address was not refused')
}

/** Until the instance's /readyz says its limits are in Redis, not in-process. */
async function onRedis (server: ServerProcess): Promise<void> {
  await pollUntil(async () => {
    const response = await fetch(`${server.origin}/readyz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    return (await response.json() as { status: string }).status === 'ok' ? true : undefined
  }, { ms: 10_000, every: 100, what: 'the instance to limit in Redis' })
}

async function adminAddress (server: ServerProcess): Promise<string> {
  await server.waitForStdout((stdout) => /"adminApi":"http:\/\/[^"]+"/.test(stdout), 5_000, 'the admin API\'s address')
  return /"adminApi":"(http:\/\/[^"]+)"/.exec(server.stdout)?.[1] ?? ''
}

async function createOverAdminApi (server: ServerProcess): Promise<string> {
  const response = await fetch(`${await adminAddress(server)}/keys`, {
    method: 'POST',
    headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'free' }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  assert.equal(response.status, 201)
  return (await response.json() as { token: string }).token
}

describe('a new key from an address over its keyless limit', { timeout: 120_000 }, () => {
  const servers: ServerProcess[] = []
  const dirs: string[] = []
  after(async () => {
    await Promise.all(servers.map(async (server) => { await server.stop() }))
    for (const dir of dirs) removeTempDir(dir)
  })

  async function serve (env: Record<string, string>): Promise<ServerProcess> {
    const server = await startServer({ ADMIN_PORT: '0', ADMIN_TOKEN, ...env })
    servers.push(server)
    return server
  }

  it('When a key is made through the instance\'s own admin API, then its first request from the spent address is served (regression: 429 rate_limited for a new key)', async () => {
    // Arrange
    const dir = makeTempDir()
    dirs.push(dir)
    const server = await serve({ DATABASE_URL: sqliteUrl(dir) })
    await spendAddress(server)

    // Act
    const token = await createOverAdminApi(server)
    const first = await status(server, token)

    // Assert
    assert.deepEqual(first, { status: 200, code: undefined })
    assert.deepEqual(await status(server), { status: 429, code: 'rate_limited' }, 'the address itself is still refused')
  })

  it('When a key is made by the command line on the same SQLite store, then its first request from the spent address is served', async () => {
    // Arrange
    const dir = makeTempDir()
    dirs.push(dir)
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const server = await serve(env)
    await spendAddress(server)

    // Act
    const { token } = await createKey(env, ['--plan', 'free'])
    const first = await status(server, token)

    // Assert
    assert.deepEqual(first, { status: 200, code: undefined })
  })

  it('When a key is made on another instance (PostgreSQL + Redis), then its first request from the spent address is served by this one', async () => {
    // Arrange: the address is spent on both instances, which share its count in Redis.
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') }
    const maker = await serve(env)
    const server = await serve(env)
    // An instance whose Redis answers late as it starts (a loaded machine) limits on its own until it finds Redis (docs/OPERATING.md).
    await Promise.all([maker, server].map(async (instance) => { await onRedis(instance) }))
    await spendAddress(server)
    assert.equal((await status(maker)).status, 429, 'the instances do not share the address\'s count')

    // Act
    const token = await createOverAdminApi(maker)
    const first = await status(server, token)

    // Assert
    assert.deepEqual(first, { status: 200, code: undefined })
  })
})
