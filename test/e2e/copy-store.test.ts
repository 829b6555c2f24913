// `petstore copy-store --to URL` (docs/SCALING.md: The move from SQLite to PostgreSQL), both
// ways between SQLite and PostgreSQL: a service started on the target
// answers every token and every animal as the source's did, carries on the
// ids, the usage, the leaks, the deprecated operation's callers and the
// idempotent replays; a target that holds anything
// is refused with nothing written; and no table of either schema is left
// out without saying so.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import pg from 'pg'
import { COPIED_TABLES, UNCOPIED_TABLES } from '../../src/db/copy.js'
import { openStorage } from '../../src/db/open.js'
import { Database } from '../../src/db/sqlite/driver.js'
import type { ApiKeyRecord, DeprecatedCaller, IssuedToken, KeyLeakRecord, KeyUsage, PetRecord, Storage } from '../../src/db/storage.js'
import { HOLDER_REPORT, reportToken } from '../../src/keys/leaks.js'
import { issueKey, revokeKey, rollKey } from '../../src/keys/manage.js'
import { bearer, buildPetRecord, INT64_MAX, newPetJson } from '../support/fixtures.js'
import { createUnlimitedKey, loadInFullSwing, type PetText } from '../support/load.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { makeTempDir, removeTempDir, runCli, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'

const REQUEST_TIMEOUT_MS = 10_000
const HOUR_MS = 3_600_000
/** Animals added on the source: several batches of the copy's 1,000. */
const PETS = 2_500

type Tokens = Record<string, string>

interface Answer { status: number, code: string | undefined }

async function withStorage<T> (url: string, work: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(url, { poolSize: 2 })
  try {
    return await work(storage)
  } finally {
    await storage.close()
  }
}

/** Keys in every state a token can be in: current, previous within its overlap, previous past it, revoked, expired; one has a cap of requests in flight of its own. */
async function makeKeys (url: string): Promise<Tokens> {
  return await withStorage(url, async (storage) => {
    const now = Date.now()
    const base = { plan: 'enterprise' as const, perMinute: 100_000, perDay: 1_000_000, environment: 'production' as const }
    const current = await issueKey(storage, { ...base, name: 'current', now })
    const overlapping = await issueKey(storage, { ...base, name: 'rolled, in its overlap', now })
    const rolled = await rollKey(storage, overlapping.id, 3600, now)
    const rolledLongAgo = await issueKey(storage, { ...base, name: 'rolled long ago', now: now - 2 * HOUR_MS })
    const rolledAgain = await rollKey(storage, rolledLongAgo.id, 60, now - 2 * HOUR_MS)
    const revoked = await issueKey(storage, { ...base, name: 'revoked', now })
    await revokeKey(storage, revoked.id, now)
    const expired = await issueKey(storage, { ...base, name: 'expired', now: now - 2 * HOUR_MS, expiresAt: now - HOUR_MS })
    const readOnly = await issueKey(storage, { ...base, name: 'read only', scopes: ['pets:read'], concurrency: 3, now })
    // Two leaks, one a scanner's and one the holder's, each of which revokes its key.
    const leaked = await issueKey(storage, { ...base, name: 'leaked', now })
    await reportToken(storage, { token: leaked.token, report: `github:${'5a'.repeat(32)}`, url: 'https://github.com/octocat/Hello-World/blob/main/.env "ü"', source: 'content' }, now)
    const givenUp = await issueKey(storage, { ...base, name: 'given up', now })
    await reportToken(storage, { token: givenUp.token, report: HOLDER_REPORT, url: null, source: null }, now + 1)
    assert.ok(rolled !== undefined && rolledAgain !== undefined)
    return {
      current: current.token,
      overlapNew: rolled.token,
      overlapOld: overlapping.token,
      pastOverlapNew: rolledAgain.token,
      pastOverlapOld: rolledLongAgo.token,
      revoked: revoked.token,
      expired: expired.token,
      readOnly: readOnly.token,
      leaked: leaked.token,
      givenUp: givenUp.token,
      neverIssued: 'pet_live_' + 'x'.repeat(43)
    }
  })
}

async function send (server: ServerProcess, path: string, token: string, init: RequestInit = {}): Promise<Response> {
  return await fetch(`${server.origin}${path}`, {
    ...init,
    headers: { ...bearer(token), 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
}

async function answers (server: ServerProcess, tokens: Tokens): Promise<Record<string, Answer>> {
  const result: Record<string, Answer> = {}
  for (const [name, token] of Object.entries(tokens)) {
    const response = await send(server, '/v1/pets?limit=1', token)
    const body = await response.json() as { code?: string }
    result[name] = { status: response.status, code: response.ok ? undefined : body.code }
  }
  return result
}

async function addPet (server: ServerProcess, token: string, body: string, idempotencyKey?: string): Promise<Response> {
  return await send(server, '/v1/pets', token, {
    method: 'POST', body, headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }
  })
}

interface Contents {
  keys: ApiKeyRecord[]
  tokens: IssuedToken[]
  pets: PetRecord[]
  usage: KeyUsage[]
  leaks: KeyLeakRecord[]
  deprecatedCallers: DeprecatedCaller[]
  secrets: string[]
}

/** Everything a store holds, as the service reads it. */
async function contents (url: string): Promise<Contents> {
  return await withStorage(url, async (storage) => {
    const keys = await storage.listApiKeys()
    const pets: PetRecord[] = []
    for (let page = await storage.listPets({ afterId: 0n, status: undefined, limit: 100 }); page.length > 0;) {
      pets.push(...page)
      page = await storage.listPets({ afterId: page[page.length - 1]?.id ?? 0n, status: undefined, limit: 100 })
    }
    const usage = (await Promise.all(keys.map(async (key) => await storage.usageOf(key.id, 0, 1_000_000)))).flat()
    const secrets = await Promise.all(['cursor', 'deployment'].map(async (name) => (await storage.secret(name)).toString('hex')))
    const leaks = await storage.firstKeyLeaks(keys.map((key) => key.id))
    const deprecatedCallers = await storage.deprecatedCallers(0, 1_000_000)
    return { keys, tokens: await storage.listTokenHashes(0, 1_000_000), pets, usage, leaks, deprecatedCallers, secrets }
  })
}

/** Fills the source through its service: animals (one with the largest categoryId), one of them under an Idempotency-Key, and usage. */
async function fillThroughService (url: string, tokens: Tokens, servers: ServerProcess[]): Promise<{ replayed: string, answered: Record<string, Answer> }> {
  const server = await startServer({ DATABASE_URL: url, USAGE_FLUSH_MS: '100' })
  servers.push(server)
  const token = tokens.current as string
  const large = await addPet(server, token, newPetJson({ name: 'the largest category', categoryId: INT64_MAX }))
  assert.equal(large.status, 201)
  const first = await addPet(server, token, newPetJson({ name: 'sent once, kept', status: 'pending' }), 'move-1')
  assert.equal(first.status, 201)
  const replayed = await first.text()
  for (let sent = 0; sent < PETS; sent += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const response = await addPet(server, tokens.overlapNew as string, newPetJson({ name: `animal ${sent + i} "quoted" ü`, categoryId: BigInt(sent + i + 1), status: 'sold' }))
      return response.status
    }))
    assert.deepEqual(new Set(batch), new Set([201]))
  }
  const answered = await answers(server, tokens)
  // Calls of the deprecated operation, counted per key and day (deprecated_calls).
  const id = /"id":(\d+)/.exec(replayed)?.[1] ?? '1'
  for (const name of ['current', 'readOnly', 'readOnly']) assert.equal((await send(server, `/v1/pets/${id}`, tokens[name] as string)).status, 200)
  await server.stop()
  return { replayed, answered }
}

async function highestPetId (url: string): Promise<bigint> {
  return (await contents(url)).pets.reduce((max, pet) => (pet.id > max ? pet.id : max), 0n)
}

describe('petstore copy-store', { timeout: 300_000 }, () => {
  const servers: ServerProcess[] = []
  const dirs: string[] = []
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    dirs.forEach(removeTempDir)
  })
  const tempSqliteUrl = (): string => {
    const dir = makeTempDir()
    dirs.push(dir)
    return sqliteUrl(dir)
  }

  for (const [from, to] of [['SQLite', 'PostgreSQL'], ['PostgreSQL', 'SQLite']] as const) {
    it(`When a ${from} store is copied to an empty ${to} one, then a service on the target answers every token, animal and replay as the source did, and the next animal gets the next id`, async () => {
      // Arrange
      const source = from === 'SQLite' ? tempSqliteUrl() : await freshPostgresDatabase()
      const target = to === 'SQLite' ? tempSqliteUrl() : await freshPostgresDatabase()
      const tokens = await makeKeys(source)
      const { replayed, answered } = await fillThroughService(source, tokens, servers)
      const before = await contents(source)
      const highest = await highestPetId(source)

      // Act
      const result = await runCli(['copy-store', '--to', target], { DATABASE_URL: source }, 120_000)

      // Assert: the command, then the target's contents, then a service on it.
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, new RegExp(`keys: ${before.keys.length}\\n[^]*pets: ${before.pets.length}\\n`))
      const copied = await contents(target)
      assert.deepEqual(copied, before)
      assert.ok(before.usage.length > 0 && before.pets.length === PETS + 2)
      assert.deepEqual(before.leaks.map((leak) => [leak.report, leak.source]), [[`github:${'5a'.repeat(32)}`, 'content'], ['holder', null]])
      assert.deepEqual(before.deprecatedCallers.map((caller) => caller.calls).sort(), [1, 2])
      assert.deepEqual(before.keys.map((key) => key.concurrency).filter((cap) => cap !== null), [3])
      assert.deepEqual(answered, {
        current: { status: 200, code: undefined },
        overlapNew: { status: 200, code: undefined },
        overlapOld: { status: 200, code: undefined },
        pastOverlapNew: { status: 200, code: undefined },
        pastOverlapOld: { status: 401, code: answered.pastOverlapOld?.code },
        revoked: { status: 401, code: answered.revoked?.code },
        expired: { status: 401, code: answered.expired?.code },
        readOnly: { status: 200, code: undefined },
        leaked: { status: 401, code: answered.leaked?.code },
        givenUp: { status: 401, code: answered.givenUp?.code },
        neverIssued: { status: 401, code: answered.neverIssued?.code }
      })
      const server = await startServer({ DATABASE_URL: target })
      servers.push(server)
      assert.deepEqual(await answers(server, tokens), answered)
      const large = await send(server, `/v1/pets/${before.pets[0]?.id ?? 0n}`, tokens.readOnly as string)
      assert.equal(await large.text(), `{"id":${before.pets[0]?.id ?? 0n},"name":"the largest category","categoryId":${INT64_MAX},"status":"available"}`)
      const replay = await addPet(server, tokens.current as string, newPetJson({ name: 'sent once, kept', status: 'pending' }), 'move-1')
      assert.equal(replay.status, 201)
      assert.equal(replay.headers.get('idempotent-replayed'), 'true')
      assert.equal(await replay.text(), replayed)
      const next = await addPet(server, tokens.current as string, newPetJson({ name: 'the first on the target' }))
      assert.equal(next.status, 201)
      assert.equal((await next.json() as { id: number }).id, Number(highest + 1n))
      await server.stop()
    })
  }

  it('When a SQLite store is copied while clients add animals, then the target holds one moment of it: every animal acknowledged before the copy, and no gap below the highest id', async () => {
    // Arrange: a service on the source under a steady write load.
    const source = tempSqliteUrl()
    const target = await freshPostgresDatabase()
    const key = await createUnlimitedKey({ DATABASE_URL: source }, 'load')
    const server = await startServer({ DATABASE_URL: source })
    servers.push(server)
    const acknowledged = new Map<string, PetText>()
    const { load } = await loadInFullSwing(server, { token: key.token, clients: 4, cycle: 1, count: 500, spreadMs: 50 }, acknowledged)
    const beforeCopy = new Set(acknowledged.keys())

    // Act
    const result = await runCli(['copy-store', '--to', target], { DATABASE_URL: source }, 60_000)
    const afterCopy = acknowledged.size
    await load.stop()

    // Assert: SQLite commits ids in order, so one moment of the source is every id from the first up to its highest.
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(load.unexpected, [])
    assert.ok(afterCopy > beforeCopy.size, `the service kept adding animals during the copy (${beforeCopy.size} before, ${afterCopy} once it ended)`)
    const ids = (await contents(target)).pets.map((pet) => pet.id)
    assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => BigInt(i + 1)))
    assert.ok([...beforeCopy].every((id) => BigInt(id) <= BigInt(ids.length)), 'every animal acknowledged before the copy is in it')
    assert.match(result.stdout, new RegExp(`\\n  pets: ${ids.length}\\n`))
  })

  it('When the target already holds a key, then copy-store exits non-zero and writes nothing to it', async () => {
    // Arrange: a source with keys and animals; a PostgreSQL target with one key, a SQLite one with one animal.
    const source = tempSqliteUrl()
    await makeKeys(source)
    await withStorage(source, async (storage) => { await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' })) })
    const postgresTarget = await freshPostgresDatabase()
    await makeKeys(postgresTarget)
    const sqliteTarget = tempSqliteUrl()
    await withStorage(sqliteTarget, async (storage) => { await storage.createPet(buildPetRecord({ name: 'Kept', categoryId: 2n, status: 'sold' })) })
    const targets = [postgresTarget, sqliteTarget]
    const before = await Promise.all(targets.map(contents))

    // Act
    const results = await Promise.all(targets.map(async (target) => await runCli(['copy-store', '--to', target], { DATABASE_URL: source }, 60_000)))

    // Assert
    for (const result of results) {
      assert.equal(result.code, 1)
      assert.match(result.stderr, /copies only into an empty store, and wrote nothing/)
      assert.equal(result.stdout, '')
    }
    assert.deepEqual(await Promise.all(targets.map(contents)), before)
  })

  it('When --to is not a store URL, then copy-store exits 2 and touches no store', async () => {
    // Arrange
    const source = tempSqliteUrl()

    // Act
    const result = await runCli(['copy-store', '--to', 'mysql://db/petstore'], { DATABASE_URL: source })

    // Assert
    assert.equal(result.code, 2)
    assert.match(result.stderr, /must be sqlite:PATH or postgres:/)
    assert.equal(existsSync(source.replace(/^sqlite:/, '')), false)
  })

  it('When the schemas are read, then every table and column is either copied or named as not copied', async () => {
    // Arrange: both schemas, as the service creates them.
    const sqlite = tempSqliteUrl()
    const postgres = await freshPostgresDatabase()
    await withStorage(sqlite, async () => {})
    await withStorage(postgres, async () => {})
    const expected = Object.fromEntries(COPIED_TABLES.map((table) => [table.name, table.columns.map(([name]) => name).sort()]))

    // Act
    const db = new Database(sqlite.replace(/^sqlite:/, ''), { readonly: true })
    const sqliteTables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((row) => row.name)
    const sqliteColumns = Object.fromEntries(sqliteTables.filter((name) => !UNCOPIED_TABLES.includes(name)).map((name) =>
      [name, db.prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${name}')`).all().map((row) => row.name).sort()]))
    db.close()
    const client = new pg.Client({ connectionString: postgres })
    await client.connect()
    const { rows } = await client.query<{ table_name: string, column_name: string }>(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name")
    await client.end()
    const postgresColumns: Record<string, string[]> = {}
    for (const row of rows) {
      if (!UNCOPIED_TABLES.includes(row.table_name)) (postgresColumns[row.table_name] ??= []).push(row.column_name)
    }

    // Assert
    assert.deepEqual(sqliteColumns, expected)
    assert.deepEqual(postgresColumns, expected)
    assert.ok(sqliteTables.every((name) => name in expected || UNCOPIED_TABLES.includes(name)))
  })
})
