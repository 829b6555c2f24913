import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database, SqliteError } from '../../../src/db/sqlite/driver.js'
import { openSqlite } from '../../../src/db/sqlite/storage.js'
import { classifySqliteError } from '../../../src/db/sqlite/errors.js'
import { StorageUnavailableError } from '../../../src/errors.js'
import { buildTestApp, capturingLogger, errorOf, jsonHeaders } from '../../support/app.js'
import { generateToken, hashToken } from '../../../src/keys/tokens.js'
import { buildKeyRecord, buildPet, buildPetRecord } from '../../support/fixtures.js'
import { pollUntil } from '../../support/process.js'
import { SQLITE_SCHEMA_V1, assertOldKeyServed } from '../schema-v1.js'
import { storageContract } from '../storage-contract.js'
import { SQLITE_SCHEMA_VERSION } from '../../../src/db/sqlite/schema.js'

// One file for the whole suite, reopened by every test: each finds the rows
// of the tests before it, as it would on a PostgreSQL database.
const contractDir = mkdtempSync(join(tmpdir(), 'petstore-contract-'))
after(() => rmSync(contractDir, { recursive: true, force: true }))
storageContract('sqlite', async () => {
  const file = join(contractDir, 'contract.db')
  const busyBudgetMs = 200
  return {
    storage: openSqlite(`sqlite:${file}`, { busyBudgetMs }),
    budgetMs: busyBudgetMs,
    // What takes SQLite away in production: another process (an instance,
    // the `petstore` command) holding the write lock.
    async makeUnavailable () {
      const other = new Database(file)
      other.exec('BEGIN IMMEDIATE')
      return async () => {
        other.exec('ROLLBACK')
        other.close()
      }
    }
  }
})

/**
 * Runs `open` and gives back the first SQLite connection that prepared a
 * statement meanwhile: the connection a storage opened for itself, which it
 * does not expose. Caught on the driver's prototype, restored at once.
 */
function firstConnectionOf<T> (open: () => T): { result: T, connection: Database } {
  const prototype = Database.prototype as unknown as { prepare: (this: Database, ...args: unknown[]) => unknown }
  const prepare = prototype.prepare
  let connection: Database | undefined
  prototype.prepare = function (...args) {
    connection ??= this
    return prepare.apply(this, args)
  }
  let result: T
  try {
    result = open()
  } finally {
    prototype.prepare = prepare
  }
  assert.ok(connection !== undefined, 'no statement was prepared while opening')
  return { result, connection }
}

describe('SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('When opened, then the storage\'s own connection runs in WAL mode with synchronous FULL', async () => {
    // Arrange: `synchronous` belongs to a connection, not to the file, so it is read on the storage's own.
    const { result: storage, connection } = firstConnectionOf(() => openSqlite(`sqlite:${join(dir, 'durable.db')}`))

    // Act
    const journalMode = connection.pragma('journal_mode', { simple: true })
    const synchronous = Number(connection.pragma('synchronous', { simple: true }))
    await storage.close()

    // Assert
    assert.equal(journalMode, 'wal')
    assert.equal(synchronous, 2, 'synchronous is not FULL (2)')
  })

  it('When opened, then the file is in WAL mode', async () => {
    const storage = openSqlite(`sqlite:${join(dir, 'a.db')}`)
    await storage.close()
    const db = new Database(join(dir, 'a.db'))
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
    db.close()
  })

  it('When two instances open the same new file, then both work and the schema is made once', async () => {
    const path = `sqlite:${join(dir, 'shared.db')}`
    const first = openSqlite(path)
    const second = openSqlite(path)
    const pet = await first.createPet(buildPetRecord({ name: 'shared', categoryId: 1n, status: 'available' }))
    assert.equal((await second.getPet(pet.id))?.name, 'shared')
    assert.deepEqual(await first.secret('cursor'), await second.secret('cursor'))
    await first.close()
    await second.close()
  })

  it('When another process holds the write lock for a moment, then an insert waits off the event loop and succeeds', async () => {
    const file = join(dir, 'locked.db')
    const storage = openSqlite(`sqlite:${file}`)
    const other = new Database(file)
    other.exec('BEGIN IMMEDIATE')
    let ticks = 0
    const ticker = setInterval(() => { ticks++ }, 5)
    setTimeout(() => other.exec('ROLLBACK'), 150)

    const pet = await storage.createPet(buildPetRecord({ name: 'waited', categoryId: 1n, status: 'available' }))
    clearInterval(ticker)
    other.close()
    await storage.close()

    assert.equal(pet.name, 'waited')
    assert.ok(ticks >= 10, `the event loop ran ${ticks} timer ticks while the insert waited`)
  })

  it('When two instances on one file get the same Idempotency-Key, then the animal is added once', async () => {
    const file = `sqlite:${join(dir, 'twins.db')}`
    const first = await buildTestApp({}, { storage: openSqlite(file) })
    const second = await buildTestApp({}, { storage: openSqlite(file) })
    try {
      const token = await first.newKey('pro')
      const post = (t: typeof first) => t.app.inject({
        method: 'POST', url: '/v1/pets', headers: jsonHeaders(token, { 'idempotency-key': 'twin' }), payload: JSON.stringify(buildPet())
      })
      const [a, b] = await Promise.all([post(first), post(second)])
      const all = await first.storage.listPets({ afterId: 0n, status: undefined, limit: 10 })

      assert.deepEqual([a.statusCode, b.statusCode], [201, 201])
      assert.equal(a.json().id, b.json().id)
      assert.equal([a, b].filter((r) => r.headers['idempotent-replayed'] === 'true').length, 1)
      assert.equal(all.length, 1)
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('When more animals than one INSERT adds are created together, some with an Idempotency-Key, then each answer has the id of its own row', async () => {
    // Arrange: 150 animals, each told apart by its name and category, every seventh with a key.
    const file = join(dir, 'big-group.db')
    const storage = openSqlite(`sqlite:${file}`)
    const key = await storage.createApiKey(buildKeyRecord())
    const statuses = ['available', 'pending', 'sold'] as const
    const pets = Array.from({ length: 150 }, (_, i) => buildPetRecord({ name: `pet-${i}`, categoryId: BigInt(i + 1), status: statuses[i % 3] ?? 'sold' }))

    // Act: queued in one turn of the event loop, so committed as one group.
    const created = await Promise.all(pets.map(async (pet, i) => i % 7 === 0
      ? (await storage.createPetOnce(pet, { apiKeyId: key.id, key: `k${i}`, requestHash: 'rh', createdAt: 5000, liveAfter: 0 })).pet
      : await storage.createPet(pet)))
    await storage.close()

    // Assert
    const other = new Database(file, { readonly: true })
    other.defaultSafeIntegers(true)
    const rows = other.prepare<[], { id: bigint, name: string, category_id: bigint, status: string }>('SELECT id, name, category_id, status FROM pets').all()
    other.close()
    const stored = new Map(rows.map((row) => [row.id, { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }]))
    assert.equal(rows.length, 150)
    assert.deepEqual(created.map((pet) => stored.get(pet.id)), created)
    assert.deepEqual(created.map(({ name, categoryId, status }) => ({ name, categoryId, status })), pets)
  })

  it('When the animal with the highest id is deleted and the file reopened, then the next id is still higher (never reused)', async () => {
    // Arrange: two animals, the later one then deleted by another connection.
    const file = join(dir, 'ids.db')
    let storage = openSqlite(`sqlite:${file}`)
    await storage.createPet(buildPetRecord({ name: 'a', categoryId: 1n, status: 'available' }))
    const highest = await storage.createPet(buildPetRecord({ name: 'b', categoryId: 1n, status: 'available' }))
    await storage.close()
    const raw = new Database(file)
    const deleted = raw.prepare('DELETE FROM pets WHERE id = ?').run(highest.id).changes
    raw.close()

    // Act
    storage = openSqlite(`sqlite:${file}`)
    const next = await storage.createPet(buildPetRecord({ name: 'c', categoryId: 1n, status: 'available' }))
    await storage.close()

    // Assert
    assert.equal(deleted, 1)
    assert.ok(next.id > highest.id, `id ${next.id} after deleting ${highest.id}`)
  })

  it('When the last page is not full, then an animal added afterwards shows on it (only full pages are kept)', async () => {
    // Arrange: three animals, read as a page of five.
    const storage = openSqlite(`sqlite:${join(dir, 'partial.db')}`)
    for (const name of ['a', 'b', 'c']) await storage.createPet(buildPetRecord({ name, categoryId: 1n, status: 'available' }))
    const page = { afterId: 0n, status: undefined, size: 5 }
    const before = await storage.listPetsJson?.(page)

    // Act
    await storage.createPet(buildPetRecord({ name: 'd', categoryId: 1n, status: 'available' }))
    const after = await storage.listPetsJson?.(page)
    await storage.close()

    // Assert
    assert.equal(before?.nextAfterId, undefined)
    assert.equal(JSON.parse(String(before?.json)).length, 3)
    assert.deepEqual(JSON.parse(String(after?.json)).map((pet: { name: string }) => pet.name), ['a', 'b', 'c', 'd'])
  })

  it('When a full page has been read, then it is answered from memory: a row removed behind the service\'s back (which it never does itself) still shows', async () => {
    // Arrange: three animals; the first two read as a full page, the third after it.
    const file = join(dir, 'full.db')
    const storage = openSqlite(`sqlite:${file}`)
    for (const name of ['a', 'b', 'c']) await storage.createPet(buildPetRecord({ name, categoryId: 1n, status: 'available' }))
    const page = { afterId: 0n, status: undefined, size: 2 }
    const before = await storage.listPetsJson?.(page)
    const raw = new Database(file)
    raw.prepare('DELETE FROM pets WHERE name = ?').run('b')
    raw.close()

    // Act
    const again = await storage.listPetsJson?.(page)
    const other = await storage.listPetsJson?.({ ...page, size: 3 })
    await storage.close()

    // Assert
    assert.ok(before?.nextAfterId !== undefined)
    assert.equal(String(again?.json), String(before?.json))
    assert.deepEqual(JSON.parse(String(other?.json)).map((pet: { name: string }) => pet.name), ['a', 'c'], 'another size is another page, read anew')
  })
})

/** A file as the release before key scopes left it, holding one production key; its token. */
function databaseOfSchemaV1 (file: string): string {
  const token = generateToken('production')
  const db = new Database(file)
  // As the service left every file it opened: in WAL mode.
  db.pragma('journal_mode = WAL')
  db.exec(SQLITE_SCHEMA_V1)
  db.pragma('user_version = 1')
  db.prepare(`INSERT INTO api_keys (name, plan, per_minute, per_day, environment, token_hash, created_at)
              VALUES ('old', 'pro', NULL, NULL, 'production', ?, 1000)`).run(hashToken(token))
  db.close()
  return token
}

/**
 * Opens the file in `count` processes that start migrating together: each
 * loads the code, says so, and opens the file only when every one is
 * ready. Resolves to their exit codes and stderr.
 */
async function openTogether (file: string, count: number): Promise<Array<{ code: number | null, stderr: string }>> {
  const module = new URL('../../../src/db/sqlite/storage.js', import.meta.url).href
  const script = `import { openSqlite } from ${JSON.stringify(module)}
    process.stdout.write('ready\\n')
    process.stdin.once('data', async () => { await openSqlite(${JSON.stringify(`sqlite:${file}`)}).close(); process.exit(0) })`
  const children = Array.from({ length: count }, () => spawn(process.execPath, ['--input-type=module', '-e', script]))
  const stderrs = children.map((child) => {
    let text = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
    return () => text
  })
  const exits = children.map(async (child) => (await once(child, 'close'))[0] as number | null)
  await Promise.all(children.map(async (child) => await once(child.stdout, 'data')))
  for (const child of children) child.stdin.end('go\n')
  const codes = await Promise.all(exits)
  return codes.map((code, i) => ({ code, stderr: stderrs[i]?.() ?? '' }))
}

describe('SQLite, a database of the schema before key scopes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-migrate-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('When it is opened, then its key has both scopes, no expiry, the prefix alone as its hint, its token among those issued, and still reads and writes', async () => {
    // Arrange
    const file = join(dir, 'v1.db')
    const token = databaseOfSchemaV1(file)

    // Act, Assert
    await assertOldKeyServed(openSqlite(`sqlite:${file}`), token)
  })

  it('When three processes open it at the same moment, then all come up, it is migrated once, and the key is kept', async () => {
    // Arrange
    const file = join(dir, 'v1-shared.db')
    databaseOfSchemaV1(file)

    // Act
    const exits = await openTogether(file, 3)

    // Assert
    assert.deepEqual(exits, [0, 0, 0].map((code) => ({ code, stderr: '' })))
    const db = new Database(file, { readonly: true })
    const version = Number(db.pragma('user_version', { simple: true }))
    const keys = db.prepare('SELECT name, scopes, token_hint FROM api_keys').all()
    db.close()
    assert.equal(version, SQLITE_SCHEMA_VERSION)
    assert.deepEqual(keys, [{ name: 'old', scopes: 'pets:read pets:write', token_hint: 'pet_live_…' }])
  })
})

describe('SQLite errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-errors-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  /**
   * Another connection to `file` adds a trigger that refuses, as a
   * constraint would, every row of `table` whose `column` is `value`:
   * `ABORT` undoes the statement, `ROLLBACK` the whole transaction,
   * `IGNORE` leaves the row out and goes on with the statement.
   */
  const refuse = (file: string, { table = 'pets', column = 'name', value, action = 'ABORT' }: { table?: string, column?: string, value: string, action?: 'ABORT' | 'ROLLBACK' | 'IGNORE' }): void => {
    const other = new Database(file)
    const raise = action === 'IGNORE' ? 'RAISE(IGNORE)' : `RAISE(${action}, 'refused by trigger')`
    other.prepare(`CREATE TRIGGER refuse_${table}_${value} BEFORE INSERT ON ${table} WHEN NEW.${column} = '${value}'
                   BEGIN SELECT ${raise}; END`).run()
    other.close()
  }
  /** The names of the animals committed to `file`, read by a connection of its own. */
  const committedNames = (file: string): string[] => {
    const other = new Database(file, { readonly: true })
    const names = other.prepare<[], { name: string }>('SELECT name FROM pets ORDER BY id').all().map((row) => row.name)
    other.close()
    return names
  }
  const pet = (name: string) => buildPetRecord({ name })

  it('When SQLite says the database is busy, locked, failing, full, read-only or cannot be opened, then it is unavailability, with the SQLite error as its cause', () => {
    const codes = ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE', 'SQLITE_IOERR',
      'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_CANTOPEN']
    for (const code of codes) {
      const error = new SqliteError('sqlite says no', code)

      const classified = classifySqliteError(error)

      assert.ok(classified instanceof StorageUnavailableError, code)
      assert.equal(classified.cause, error, code)
    }
  })

  it('When SQLite reports any other error, then it is thrown as it is, not as unavailability', () => {
    const codes = ['SQLITE_CONSTRAINT_CHECK', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_TRIGGER', 'SQLITE_ERROR',
      'SQLITE_MISUSE', 'SQLITE_MISMATCH', 'SQLITE_CORRUPT', 'SQLITE_RANGE']
    for (const code of codes) {
      const error = new SqliteError('sqlite says no', code)

      assert.equal(classifySqliteError(error), error, code)
    }
  })

  it('When the database refuses an animal, then 500 internal_error with the cause in the log only, and /readyz stays 200', async () => {
    // Arrange
    const file = join(dir, 'refusing.db')
    const { logger, entries } = capturingLogger()
    const t = await buildTestApp({}, { storage: openSqlite(`sqlite:${file}`), logger })
    try {
      const token = await t.newKey('pro')
      refuse(file, { value: 'poison' })

      // Act
      const response = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: JSON.stringify(buildPet({ name: 'poison' })) })
      const ready = await t.app.inject({ url: '/readyz' })

      // Assert
      assert.equal(response.statusCode, 500)
      assert.equal(errorOf(response).code, 'internal_error')
      assert.doesNotMatch(response.body, /refused by trigger|SQLITE|sqlite|at \w+ \(/)
      assert.equal(ready.statusCode, 200)
      const logged = entries().find((entry) => entry.msg === 'request failed' && entry.status === 500)
      assert.equal(logged?.err?.code, 'SQLITE_CONSTRAINT_TRIGGER')
      assert.match(logged?.err?.message ?? '', /refused by trigger/)
    } finally {
      await t.close()
    }
  })

  it('When the database refuses one insert of a group commit, then only its request fails and the rest of the group is committed', async () => {
    // Arrange
    const file = join(dir, 'group.db')
    const storage = openSqlite(`sqlite:${file}`)
    refuse(file, { value: 'poison' })

    // Act: queued in one turn of the event loop, so committed as one group.
    const [before, refused, after] = await Promise.allSettled([storage.createPet(pet('before')), storage.createPet(pet('poison')), storage.createPet(pet('after'))])
    await storage.close()

    // Assert
    assert.equal(before.status, 'fulfilled')
    assert.equal(after.status, 'fulfilled')
    const reason: unknown = refused.status === 'rejected' ? refused.reason : undefined
    assert.ok(reason instanceof SqliteError, 'refused as the SQLite error it is, not as unavailability')
    assert.equal(reason.code, 'SQLITE_CONSTRAINT_TRIGGER')
    assert.deepEqual(committedNames(file), ['before', 'after'])
  })

  it('When the idempotency record of an insert is refused, then its animal is not stored either and the rest of the group is', async () => {
    // Arrange
    const file = join(dir, 'group-once.db')
    const storage = openSqlite(`sqlite:${file}`)
    const key = await storage.createApiKey(buildKeyRecord())
    refuse(file, { table: 'idempotency_keys', column: 'key', value: 'poison' })
    const once = { apiKeyId: key.id, requestHash: 'rh', createdAt: 5000, liveAfter: 0 }

    // Act
    const [refused, kept] = await Promise.allSettled([
      storage.createPetOnce(pet('lost'), { ...once, key: 'poison' }), storage.createPetOnce(pet('kept'), { ...once, key: 'fine' })])
    await storage.close()

    // Assert
    assert.equal(refused.status, 'rejected')
    assert.equal(kept.status, 'fulfilled')
    assert.deepEqual(committedNames(file), ['kept'])
  })

  it('When an insert makes SQLite roll back the whole group transaction, then only its request fails and the others are committed', async () => {
    // Arrange
    const file = join(dir, 'group-rollback.db')
    const storage = openSqlite(`sqlite:${file}`)
    refuse(file, { value: 'poison', action: 'ROLLBACK' })

    // Act
    const [before, refused, after] = await Promise.allSettled([storage.createPet(pet('before')), storage.createPet(pet('poison')), storage.createPet(pet('after'))])
    await storage.close()

    // Assert
    assert.equal(before.status, 'fulfilled')
    assert.equal(after.status, 'fulfilled')
    assert.equal(refused.status, 'rejected')
    assert.deepEqual(committedNames(file).sort(), ['after', 'before'])
  })

  it('When the database leaves one insert of a group out without an error, then only its request fails and the others get the ids of their own rows', async () => {
    // Arrange
    const file = join(dir, 'group-ignore.db')
    const storage = openSqlite(`sqlite:${file}`)
    refuse(file, { value: 'poison', action: 'IGNORE' })

    // Act
    const [before, refused, after] = await Promise.allSettled([storage.createPet(pet('before')), storage.createPet(pet('poison')), storage.createPet(pet('after'))])
    await storage.close()

    // Assert
    assert.equal(refused.status, 'rejected')
    const other = new Database(file, { readonly: true })
    other.defaultSafeIntegers(true)
    const ids = new Map(other.prepare<[], { id: bigint, name: string }>('SELECT id, name FROM pets').all().map((row) => [row.name, row.id]))
    other.close()
    assert.deepEqual([...ids.keys()].sort(), ['after', 'before'])
    assert.equal(before.status === 'fulfilled' ? before.value.id : undefined, ids.get('before'))
    assert.equal(after.status === 'fulfilled' ? after.value.id : undefined, ids.get('after'))
  })

  it('When another connection holds the write lock past the budget, then POST /v1/pets gets 503 and /readyz 503 until the lock is released', async () => {
    // Arrange
    const file = join(dir, 'held.db')
    const { logger, entries } = capturingLogger()
    const t = await buildTestApp({}, { storage: openSqlite(`sqlite:${file}`, { busyBudgetMs: 200 }), logger })
    const other = new Database(file)
    try {
      const token = await t.newKey('pro')
      const post = () => t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: JSON.stringify(buildPet()) })
      other.exec('BEGIN IMMEDIATE')

      // Act
      const refused = await post()
      const notReady = await t.app.inject({ url: '/readyz' })
      other.exec('ROLLBACK')
      // /readyz gives its answer again for a second: ready once that 503 is a second old.
      const ready = await pollUntil(async () => {
        const response = await t.app.inject({ url: '/readyz' })
        return response.statusCode === 200 ? response : undefined
      }, { ms: 5000, every: 50, what: '/readyz to say ready' })
      const accepted = await post()

      // Assert
      assert.equal(refused.statusCode, 503)
      assert.equal(errorOf(refused).code, 'service_unavailable')
      assert.ok(Number(refused.headers['retry-after']) >= 1)
      assert.doesNotMatch(refused.body, /SQLITE|sqlite/)
      assert.equal(notReady.statusCode, 503)
      assert.equal(ready.statusCode, 200)
      assert.equal(accepted.statusCode, 201)
      const logged = entries().find((entry) => entry.msg === 'request failed')
      assert.equal(logged?.err?.type, 'StorageUnavailableError')
      assert.match(logged?.err?.stack ?? '', /caused by: SqliteError: database is locked/)
    } finally {
      other.close()
      await t.close()
    }
  })
})

// Regression: "the SQLite file and its folder are readable by every local
// user". They were made with the process's umask (0644 and 0755 under the
// usual 022), and they hold the key hashes and the cursor secret.
describe('the SQLite file and its folder are readable by every local user', () => {
  it('When the service makes the folder and the database under a permissive umask, then the folder is 0700 and the file, its -wal and -shm are 0600', async () => {
    // Arrange
    const parent = mkdtempSync(join(tmpdir(), 'petstore-modes-'))
    const previous = process.umask(0o022)
    const folder = join(parent, 'data', 'petstore')
    const file = join(folder, 'petstore.db')
    try {
      // Act
      const storage = openSqlite(`sqlite:${file}`)
      await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))

      // Assert: while the connection is open, so that the -wal and -shm files exist.
      const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8)
      assert.deepEqual(
        [folder, join(parent, 'data'), file, `${file}-wal`, `${file}-shm`].map(mode),
        ['700', '700', '600', '600', '600'])
      await storage.close()
    } finally {
      process.umask(previous)
      rmSync(parent, { recursive: true, force: true })
    }
  })
})
