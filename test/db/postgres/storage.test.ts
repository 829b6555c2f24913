// The PostgreSQL backend, on the throwaway cluster that `npm test` starts.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { openPostgres, type PostgresStorage } from '../../../src/db/postgres/storage.js'
import { StorageUnavailableError } from '../../../src/errors.js'
import { generateToken, hashToken } from '../../../src/keys/tokens.js'
import { freshPostgresDatabase, viaPort } from '../../support/postgres.js'
import { TcpProxy } from '../../support/tcp-proxy.js'
import { POSTGRES_MIGRATIONS_TABLE, POSTGRES_SCHEMA_V1, assertOldKeyServed } from '../schema-v1.js'
import { storageContract } from '../storage-contract.js'
import { POSTGRES_SCHEMA_VERSION } from '../../../src/db/postgres/schema.js'
import { buildPetRecord } from '../../support/fixtures.js'

/** Short, so that the unavailability tests are quick; production waits 5 s. */
const TEST_TIMEOUT_MS = 300

let contractDatabase: Promise<string> | undefined
storageContract('postgres', async () => {
  contractDatabase ??= freshPostgresDatabase()
  const url = await contractDatabase
  // Each harness reaches the server through its own proxy, which it can freeze.
  const proxy = await TcpProxy.start(Number(new URL(url).port))
  const storage = await openPostgres(viaPort(url, proxy.port), { timeoutMs: TEST_TIMEOUT_MS, poolSize: 4 })
  const close = storage.close.bind(storage)
  storage.close = async () => {
    await close()
    await proxy.close()
  }
  return {
    storage,
    budgetMs: TEST_TIMEOUT_MS,
    // A server that stopped answering: a frozen process or a cut network.
    async makeUnavailable () {
      proxy.freeze()
      return async () => { proxy.thaw() }
    }
  }
})

describe('PostgreSQL', () => {
  let url: string
  let storage: PostgresStorage | undefined
  before(async () => {
    url = await freshPostgresDatabase()
    storage = await openPostgres(url)
  })
  after(async () => { await storage?.close() })

  const opened = (): PostgresStorage => {
    assert.ok(storage !== undefined)
    return storage
  }

  async function query<Row extends pg.QueryResultRow> (sql: string, values: unknown[] = []): Promise<Row[]> {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query<Row>(sql, values)).rows
    } finally {
      await client.end()
    }
  }

  it('When five instances open an empty database at the same moment, then all come up and each migration runs once', async () => {
    // Arrange
    const empty = await freshPostgresDatabase()

    // Act
    const storages = await Promise.all(Array.from({ length: 5 }, async () => await openPostgres(empty, { poolSize: 2 })))
    await Promise.all(storages.map(async (s) => await s.close()))

    // Assert
    const client = new pg.Client({ connectionString: empty })
    await client.connect()
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')
    await client.end()
    assert.deepEqual(rows.map((row) => row.version), Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_v, i) => i + 1))
  })

  it('When creates arrive together, then they are inserted by one statement, in one transaction', async () => {
    // Arrange
    const tag = randomUUID()

    // Act
    const created = await Promise.all(Array.from({ length: 200 }, async (_, i) =>
      await opened().createPet(buildPetRecord({ name: `${tag}-${i}`, categoryId: BigInt(i + 1), status: 'pending' }))))

    // Assert: rows written by one statement share its transaction id.
    const rows = await query<{ transactions: string, stored: string }>(
      'SELECT count(DISTINCT xmin::text) AS transactions, count(*) AS stored FROM pets WHERE name LIKE $1', [`${tag}-%`])
    assert.deepEqual(rows[0], { transactions: '1', stored: '200' })
    for (const [i, pet] of created.entries()) assert.equal(pet.name, `${tag}-${i}`)
    for (const pet of created) assert.deepEqual(await opened().getPet(pet.id), pet)
  })

  it('When the database refuses one create of a group, then only that one fails, not as unavailable, and the rest are stored', async () => {
    // Arrange: categoryId 0 breaks the table's CHECK; the service's validation never sends it.
    const tag = randomUUID()

    // Act
    const outcomes = await Promise.allSettled([1n, 0n, 3n].map(async (categoryId) =>
      await opened().createPet(buildPetRecord({ name: `${tag}-${categoryId}`, categoryId, status: 'sold' }))))

    // Assert
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled'])
    const refused = outcomes[1]
    assert.ok(refused?.status === 'rejected')
    assert.ok(!(refused.reason instanceof StorageUnavailableError), String(refused.reason))
    const rows = await query<{ name: string }>('SELECT name FROM pets WHERE name LIKE $1 ORDER BY name', [`${tag}-%`])
    assert.deepEqual(rows.map((row) => row.name), [`${tag}-1`, `${tag}-3`])
  })

  it('When the server cannot be reached at all, then opening fails as unavailable within its timeout', async () => {
    // Arrange: a port where nothing listens any more.
    const proxy = await TcpProxy.start(1)
    const port = proxy.port
    await proxy.close()
    const started = Date.now()

    // Act
    const failure = await openPostgres(viaPort(url, port), { timeoutMs: TEST_TIMEOUT_MS }).then(() => undefined, (error: unknown) => error)

    // Assert
    assert.ok(failure instanceof StorageUnavailableError, String(failure))
    assert.ok(Date.now() - started < TEST_TIMEOUT_MS + 1000)
  })

  it('When every connection is taken and queries queue for one, then the pool says how long the oldest has waited, and 0 once none waits', async () => {
    // Arrange: one connection, held by a query that a frozen server does not answer.
    const proxy = await TcpProxy.start(Number(new URL(url).port))
    let clock = 1_000
    const storage = await openPostgres(viaPort(url, proxy.port), { poolSize: 1, clock: () => clock })
    try {
      proxy.freeze()
      const held = storage.ping()
      // The pool hands its idle connection over on the next tick.
      await new Promise((resolve) => setImmediate(resolve))

      // Act
      const first = storage.ping()
      clock += 300
      const second = storage.ping()
      clock += 400
      const waiting = storage.poolUse()
      proxy.thaw()
      await Promise.all([held, first, second])

      // Assert
      assert.equal(waiting.waiting, 2)
      assert.equal(waiting.longestWaitMs, 700)
      assert.deepEqual([storage.poolUse().waiting, storage.poolUse().longestWaitMs], [0, 0])
    } finally {
      await storage.close()
      await proxy.close()
    }
  })

  const names = (page: { json: Buffer }): string[] => (JSON.parse(String(page.json)) as Array<{ name: string }>).map((pet) => pet.name)
  const available = (name: string) => buildPetRecord({ name, categoryId: 1n, status: 'available' })

  it('When an id commits after a higher one was listed, then the page with the gap is read anew and shows it (only pages whose ids run without a gap are kept)', async () => {
    // Arrange: a database of its own; "b" takes its id in a transaction left open, then "c" and "d" commit.
    const own = await freshPostgresDatabase()
    const storage = await openPostgres(own)
    const late = new pg.Client({ connectionString: own })
    await late.connect()
    try {
      const a = await storage.createPet(available('a'))
      await late.query('BEGIN')
      await late.query("INSERT INTO pets (name, category_id, status) VALUES ('b', 1, 'available')")
      await storage.createPet(available('c'))
      await storage.createPet(available('d'))
      const page = { afterId: a.id - 1n, status: undefined, size: 2 }
      const before = await storage.listPetsJson(page)

      // Act
      await late.query('COMMIT')
      const after = await storage.listPetsJson(page)

      // Assert
      assert.deepEqual(names(before), ['a', 'c'])
      assert.deepEqual(names(after), ['a', 'b'])
    } finally {
      await late.end()
      await storage.close()
    }
  })

  it('When a full page holds every id from its cursor on, then it is answered from memory: a row removed behind the service\'s back (which it never does itself) still shows', async () => {
    // Arrange: three animals; the first two read as a full page, with and without a status.
    const own = await freshPostgresDatabase()
    const storage = await openPostgres(own)
    try {
      const a = await storage.createPet(available('a'))
      await storage.createPet(available('b'))
      await storage.createPet(available('c'))
      const page = { afterId: a.id - 1n, status: undefined, size: 2 }
      const filtered = { ...page, status: 'available' as const }
      const before = await storage.listPetsJson(page)
      const filteredBefore = await storage.listPetsJson(filtered)
      const raw = new pg.Client({ connectionString: own })
      await raw.connect()
      await raw.query("DELETE FROM pets WHERE name = 'b'")
      await raw.end()

      // Act
      const again = await storage.listPetsJson(page)
      const filteredAgain = await storage.listPetsJson(filtered)
      const other = await storage.listPetsJson({ ...page, size: 3 })

      // Assert
      assert.deepEqual(names(before), ['a', 'b'])
      assert.equal(again, before, 'the kept page, not a copy')
      assert.equal(filteredAgain, filteredBefore, 'a page with a status is kept by the same rule')
      assert.deepEqual(names(other), ['a', 'c'], 'another size is another page, read anew')
    } finally {
      await storage.close()
    }
  })

  it('When listing by status, then the query uses the (status, id) index', async () => {
    // Act: sequential scans off, as the planner reads a table of a few
    // rows whole once its statistics say how few (autovacuum's analyze may
    // have run by now), whatever its indexes.
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    let rows: Array<{ 'QUERY PLAN': string }>
    try {
      await client.query('SET enable_seqscan = off')
      rows = (await client.query<{ 'QUERY PLAN': string }>("EXPLAIN SELECT id FROM pets WHERE status = 'sold' AND id > 10 ORDER BY id LIMIT 21")).rows
    } finally {
      await client.end()
    }

    // Assert
    assert.match(rows.map((row) => row['QUERY PLAN']).join('\n'), /pets_status_id/)
  })
})

describe('PostgreSQL, a database of the schema before key scopes', () => {
  /** A fresh database as the release before key scopes left it, holding one production key; its URL and the key's token. */
  async function databaseOfSchemaV1 (): Promise<{ url: string, token: string }> {
    const url = await freshPostgresDatabase()
    const token = generateToken('production')
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await client.query(POSTGRES_MIGRATIONS_TABLE)
      await client.query(POSTGRES_SCHEMA_V1)
      await client.query('INSERT INTO schema_migrations (version) VALUES (1)')
      await client.query(`INSERT INTO api_keys (name, plan, per_minute, per_day, environment, token_hash, created_at)
                          VALUES ('old', 'pro', NULL, NULL, 'production', $1, 1000)`, [hashToken(token)])
    } finally {
      await client.end()
    }
    return { url, token }
  }

  it('When five instances open it at the same moment, then all come up, it is migrated once, and its key has both scopes, no expiry, the prefix alone as its hint, its token among those issued, and still reads and writes', async () => {
    // Arrange
    const { url, token } = await databaseOfSchemaV1()

    // Act
    const storages = await Promise.all(Array.from({ length: 5 }, async () => await openPostgres(url, { poolSize: 2 })))
    const [first, ...others] = storages as [PostgresStorage, ...PostgresStorage[]]
    await Promise.all(others.map(async (s) => await s.close()))

    // Assert
    await assertOldKeyServed(first, token)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')
    await client.end()
    assert.deepEqual(rows.map((row) => row.version), Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_v, i) => i + 1))
  })
})
