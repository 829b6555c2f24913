// The admin API over a real process (docs/KEYS.md: The admin API): `petstore
// serve` with ADMIN_PORT and ADMIN_TOKEN, a key made, rolled and revoked
// over HTTP on the admin listener, its tokens used on the public port; and
// a start refused for an ADMIN_TOKEN too short.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { makeTempDir, pollUntil, removeTempDir, runCli, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'
import { bearer } from '../support/fixtures.js'

const ADMIN_TOKEN = 'adm-e2e-9Kx3Lq7Wp2Zr5Ty8Vb4Nm6Hc1Jd0Fg'
const REQUEST_TIMEOUT_MS = 5_000
/** Every change holds within a second; this is only how long the test waits before it gives up. */
const PROPAGATION_LIMIT_MS = 3_000

interface KeyBody { id: number, token: string, revoked: boolean, previousTokenExpiresAt: string | null }

describe('the admin API of petstore serve, over real HTTP', { timeout: 60_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let adminBase = ''

  before(async () => {
    dir = makeTempDir()
    server = await startServer({ DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN })
    // The start line names the admin API's address: ADMIN_PORT=0 takes any free port.
    await server.waitForStdout((stdout) => /"adminApi":"http:\/\/[^"]+"/.test(stdout), 5_000, 'the admin API\'s address')
    adminBase = /"adminApi":"(http:\/\/[^"]+)"/.exec(server.stdout)?.[1] ?? ''
  })
  after(async () => {
    await server?.stop()
    removeTempDir(dir)
  })

  const running = (): ServerProcess => {
    assert.ok(server !== undefined, 'the server was not started')
    return server
  }
  async function admin (method: string, path: string, body?: unknown): Promise<{ status: number, json: unknown, text: string }> {
    const response = await fetch(`${adminBase}${path}`, {
      method,
      headers: { ...bearer(ADMIN_TOKEN), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    })
    const text = await response.text()
    return { status: response.status, json: text === '' ? undefined : JSON.parse(text), text }
  }
  async function pets (token: string): Promise<number> {
    const response = await fetch(`${running().origin}/v1/pets`, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    await response.arrayBuffer()
    return response.status
  }
  /** Polls the public port until `token` gets `status`; gives how long that took. */
  async function untilStatus (token: string, status: number, what: string): Promise<number> {
    const started = performance.now()
    await pollUntil(async () => (await pets(token)) === status ? true : undefined, { ms: PROPAGATION_LIMIT_MS, every: 50, what })
    return Math.round(performance.now() - started)
  }

  it('When the service starts with ADMIN_PORT=0 and ADMIN_TOKEN, then the admin API is on its own port under /admin/v1, not on the public port', async () => {
    // Assert
    assert.match(adminBase, /^http:\/\/127\.0\.0\.1:\d+\/admin\/v1$/)
    assert.notEqual(new URL(adminBase).port, String(running().port))
    const publicAnswer = await fetch(`${running().origin}/admin/v1/keys`, { headers: bearer(ADMIN_TOKEN), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    assert.equal(publicAnswer.status, 404)
    await publicAnswer.arrayBuffer()
    const noToken = await fetch(`${adminBase}/keys`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    assert.equal(noToken.status, 401)
    assert.equal(noToken.headers.get('www-authenticate'), 'Bearer realm="petstore-admin"')
    await noToken.arrayBuffer()
  })

  it('When a key is made over HTTP, rolled with no overlap and revoked, then the public port takes and refuses its tokens accordingly', async (t) => {
    // Arrange
    const created = await admin('POST', '/keys', { plan: 'pro', name: 'e2e' })
    assert.equal(created.status, 201, created.text)
    const key = created.json as KeyBody
    assert.equal(await pets(key.token), 200)

    // Act: roll, with no overlap.
    const rolled = await admin('POST', `/keys/${key.id}/roll`, { expireCurrentInSeconds: 0 })
    assert.equal(rolled.status, 201, rolled.text)
    const next = rolled.json as KeyBody
    const oldRefusedAfter = await untilStatus(key.token, 401, 'the old token to be refused')
    const newStatus = await pets(next.token)

    // Act: revoke.
    const revoked = await admin('DELETE', `/keys/${key.id}`)
    const revokedAfter = await untilStatus(next.token, 401, 'the revoked key to be refused')

    // Assert
    assert.equal(next.id, key.id)
    assert.notEqual(next.token, key.token)
    assert.equal(next.previousTokenExpiresAt, null)
    assert.equal(newStatus, 200)
    assert.equal(revoked.status, 200, revoked.text)
    assert.equal((revoked.json as KeyBody).revoked, true)
    assert.equal(await pets(key.token), 401)
    t.diagnostic(`old token refused after ${oldRefusedAfter} ms; revoked key refused after ${revokedAfter} ms`)
    const found = await admin('POST', '/keys/lookup', { token: next.token })
    assert.equal(found.status, 200, 'a revoked key\'s token still names its key')
    assert.equal((found.json as KeyBody).id, key.id)
    assert.equal((found.json as { matchedToken: string }).matchedToken, 'current')
  })
})

describe('a start with an ADMIN_TOKEN too short', { timeout: 30_000 }, () => {
  it('When ADMIN_TOKEN is shorter than 32 characters, then petstore serve exits non-zero with a message naming ADMIN_TOKEN, never its value', async () => {
    // Arrange
    const dir = makeTempDir()
    const short = 'too-short-admin-token'
    try {
      // Act
      const result = await runCli(['serve'], { DATABASE_URL: sqliteUrl(dir), HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ADMIN_TOKEN: short })

      // Assert
      const output = `${result.stdout}${result.stderr}`
      assert.notEqual(result.code, 0, output)
      assert.notEqual(result.code, null, output)
      assert.match(output, /ADMIN_TOKEN/)
      assert.match(output, /32/)
      assert.equal(output.includes(short), false, `the output echoes the token:\n${output}`)
      assert.doesNotMatch(output, /listening on/)
    } finally {
      removeTempDir(dir)
    }
  })
})
