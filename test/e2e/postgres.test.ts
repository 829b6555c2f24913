// The service and the `petstore` command on PostgreSQL, as operators run
// them: DATABASE_URL=postgres://…, keys made with the command, requests
// over real HTTP.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { freshPostgresDatabase } from '../support/postgres.js'
import { FIRST_UNSAFE_INTEGER, INT64_MAX, bearer, newPetJson } from '../support/fixtures.js'
import {
  createKey, idsIn, linkTarget, pollUntil, runCliOk, startServer, type ServerProcess
} from '../support/process.js'

const TOKEN = /^pet_live_[0-9A-Za-z]{36}$/
const REQUEST_TIMEOUT_MS = 5_000

describe('petstore serve and petstore keys, on PostgreSQL', { timeout: 60_000 }, () => {
  let env: Record<string, string> = {}
  let server: ServerProcess | undefined

  const running = (): ServerProcess => {
    assert.ok(server !== undefined, 'the server was not started')
    return server
  }
  const call = async (path: string, init: RequestInit = {}): Promise<Response> =>
    await fetch(`${running().origin}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })

  before(async () => {
    env = { DATABASE_URL: await freshPostgresDatabase() }
    server = await startServer(env)
  })
  after(async () => { await server?.dispose() })

  it('When a key is created without --json, then its token is alone on the last line of stdout', async () => {
    // Act
    const { stdout } = await runCliOk(['keys', 'create', '--plan', 'free', '--name', 'plain'], env)

    // Assert
    assert.match(stdout.trimEnd().split('\n').at(-1) ?? '', TOKEN)
  })

  it('When pets with int64 categoryIds are added and listed, then every digit comes back and Link pages through them', async () => {
    // Arrange
    const { token } = await createKey(env, ['--plan', 'pro', '--name', 'pets'])
    const headers = { ...bearer(token), 'content-type': 'application/json' }

    // Act
    const created = []
    for (const categoryId of [INT64_MAX, FIRST_UNSAFE_INTEGER, 7n]) {
      const response = await call('/v1/pets', { method: 'POST', headers, body: newPetJson({ name: 'Pg', categoryId, status: 'sold' }) })
      const text = await response.text()
      assert.equal(response.status, 201, text)
      created.push(text)
    }
    const first = await call('/v1/pets?status=sold&limit=2', { headers: bearer(token) })
    const next = linkTarget(first.headers.get('link'), 'next')
    assert.ok(next !== undefined, 'no Link rel="next" on a page that has more')
    const second = await call(new URL(next).pathname + new URL(next).search, { headers: bearer(token) })

    // Assert
    assert.ok(created[0]?.includes(`"categoryId":${INT64_MAX}`), created[0])
    assert.ok(created[1]?.includes(`"categoryId":${FIRST_UNSAFE_INTEGER}`), created[1])
    const ids = created.flatMap(idsIn)
    assert.deepEqual([...idsIn(await first.text()), ...idsIn(await second.text())], ids)
    const fetched = await call(`/v1/pets/${ids[0] ?? ''}`, { headers: bearer(token) })
    assert.ok((await fetched.text()).includes(`"categoryId":${INT64_MAX}`))
  })

  it('When a key is revoked with `keys revoke ID`, then the server refuses it within one second and `keys list --json` shows it revoked', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'free', '--name', 'revoked'])
    assert.equal((await call('/v1/pets', { headers: bearer(key.token) })).status, 200)

    // Act
    await runCliOk(['keys', 'revoke', String(key.id)], env)
    const revokedAt = Date.now()
    await pollUntil(async () => {
      const response = await call('/v1/pets', { headers: bearer(key.token) })
      return response.status === 401 ? true : undefined
    }, { ms: 3_000, every: 50, what: 'the revoked key to be refused' })
    const elapsed = Date.now() - revokedAt
    const listed = await runCliOk(['keys', 'list', '--json'], env)

    // Assert
    assert.ok(elapsed < 1_000, `refused after ${elapsed} ms`)
    const keys = JSON.parse(listed.stdout) as Array<{ id: number, name: string, plan: string, revoked: boolean }>
    const listedKey = keys.find((k) => k.id === key.id)
    assert.deepEqual([listedKey?.name, listedKey?.plan, listedKey?.revoked], ['revoked', 'free', true])
    assert.ok(keys.some((k) => k.name === 'pets' && !k.revoked))
    assert.ok(!listed.stdout.includes(key.token), 'keys list printed a secret')
  })

  it('When /readyz is asked, then it names the PostgreSQL database as ready', async () => {
    // Act
    const response = await call('/readyz')
    const body = await response.json() as { checks: { database: string } }

    // Assert
    assert.equal(response.status, 200)
    assert.equal(body.checks.database, 'ok (postgres)')
  })

  it('When the server receives SIGTERM, then it exits with code 0', async () => {
    // Act
    const exit = await running().stop()

    // Assert
    assert.deepEqual(exit, { code: 0, signal: null })
  })
})
