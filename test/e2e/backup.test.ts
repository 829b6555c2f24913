// `petstore backup FILE` (docs/OPERATING.md: Backups): a copy taken while the service
// writes holds every animal acknowledged before it began and passes
// SQLite's integrity check, a backup killed midway leaves FILE as it
// was, or absent, and a FILE that is the store itself, however reached, is refused.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, linkSync, readFileSync, readdirSync, statSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { Database } from '../../src/db/sqlite/driver.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { addPet, createUnlimitedKey, loadInFullSwing, restartAndList, type PetText } from '../support/load.js'
import { databaseFile, makeTempDir, removeTempDir, runCli, runCliOk, spawnCli, sqliteUrl, startServer, withTimeout, type ServerProcess } from '../support/process.js'

/** Animals in the store a backup is killed in: enough that copying and checking them takes a good part of a second. */
const LARGE_STORE_PETS = 600_000

function integrityOf (file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare<[], { integrity_check: string }>('PRAGMA integrity_check').all()).map((row) => row.integrity_check).join('; ')
  } finally {
    db.close()
  }
}

function digest (file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex')
}

/** A store with a key (through the CLI) and `pets` animals written straight into the file, much faster than through the service. */
async function makeLargeStore (dir: string, pets: number): Promise<void> {
  const env = { DATABASE_URL: sqliteUrl(dir) }
  await (openSqlite(env.DATABASE_URL)).close()
  await createUnlimitedKey(env, 'large')
  const db = new Database(databaseFile(dir))
  try {
    const insert = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
    db.transaction(() => {
      for (let i = 0; i < pets; i++) insert.run(`animal number ${i} of the large store`, i + 1, 'available')
    })()
  } finally {
    db.close()
  }
}

/** Sizes and times of the files in `dir` but the store's own. */
function othersIn (dir: string): Map<string, string> {
  const files = new Map<string, string>()
  for (const name of readdirSync(dir)) {
    if (name.startsWith('p.db')) continue
    const stat = statSync(join(dir, name), { throwIfNoEntry: false })
    if (stat !== undefined) files.set(name, `${stat.size} ${stat.mtimeMs}`)
  }
  return files
}

/** Runs `petstore backup FILE` and sends it SIGKILL as soon as it has written anything to `dir`; says whether it did. */
async function killMidway (env: Record<string, string>, dir: string, file: string): Promise<boolean> {
  const before = othersIn(dir)
  const child = spawnCli(['backup', file], env)
  const closed = new Promise<void>((resolve) => { child.once('close', () => { resolve() }) })
  let killed = false
  const deadline = Date.now() + 20_000
  while (child.exitCode === null && Date.now() < deadline) {
    const now = othersIn(dir)
    if ([...now].some(([name, state]) => before.get(name) !== state && !state.startsWith('0 '))) {
      killed = child.kill('SIGKILL')
      break
    }
    await delay(1)
  }
  await withTimeout(closed, 10_000, 'the killed backup to end')
  return killed && child.signalCode === 'SIGKILL'
}

describe('petstore backup', { timeout: 180_000 }, () => {
  const servers: ServerProcess[] = []
  const dirs: string[] = []
  // Made once (some 5 s), copied into each test's own folder.
  let largeStoreFile = ''
  before(async () => {
    const dir = makeTempDir()
    dirs.push(dir)
    await makeLargeStore(dir, LARGE_STORE_PETS)
    largeStoreFile = databaseFile(dir)
    assert.equal(existsSync(`${largeStoreFile}-wal`), false, 'the large store is one file once closed')
  })
  /** A copy of the large store in `dir`, closed, so a single file. */
  const largeStore = (dir: string): Record<string, string> => {
    copyFileSync(largeStoreFile, databaseFile(dir))
    return { DATABASE_URL: sqliteUrl(dir) }
  }
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    dirs.forEach(removeTempDir)
  })

  it('When a backup is taken while clients add animals, then a service started on it serves every animal acknowledged before it began, and the copy passes the integrity check', async () => {
    // Arrange: a service under a steady write load.
    const dir = makeTempDir()
    dirs.push(dir)
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const key = await createUnlimitedKey(env, 'backup')
    const server = await startServer(env)
    servers.push(server)
    const acknowledged = new Map<string, PetText>()
    const { load } = await loadInFullSwing(server, { token: key.token, clients: 4, cycle: 1, count: 200, spreadMs: 50 }, acknowledged)
    const beforeBackup = new Map(acknowledged)
    const file = join(dir, 'backup.db')

    // Act
    const result = await runCliOk(['backup', file], env)
    const duringBackup = acknowledged.size
    await load.stop()

    // Assert
    assert.ok(duringBackup > beforeBackup.size, `the service kept adding animals during the backup (${beforeBackup.size} before, ${duringBackup} once it ended)`)
    assert.deepEqual(load.unexpected, [])
    assert.match(result.stdout, /^backed up 1 keys and \d+ pets to .*backup\.db\n$/)
    assert.equal(integrityOf(file), 'ok')
    assert.equal(readdirSync(dir).filter((name) => name.endsWith('.partial')).length, 0)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const { lost } = await restartAndList({ DATABASE_URL: `sqlite:${file}` }, key.token, beforeBackup, servers)
    assert.deepEqual(lost, [])
  })

  it('When a backup over an earlier one is killed midway, then the earlier one is left whole and unchanged', async () => {
    // Arrange: yesterday's backup of a large store, which has grown since.
    const dir = makeTempDir()
    dirs.push(dir)
    const env = largeStore(dir)
    const file = join(dir, 'nightly.db')
    await runCliOk(['backup', file], env)
    const earlier = digest(file)
    const db = new Database(databaseFile(dir))
    db.prepare("INSERT INTO pets (name, category_id, status) VALUES ('added since', 1, 'sold')").run()
    db.close()

    // Act
    const killed = await killMidway(env, dir, file)

    // Assert
    assert.ok(killed, 'the backup was killed while its partial copy was being written')
    assert.equal(digest(file), earlier)
    assert.equal(integrityOf(file), 'ok')
  })

  it('When the first backup to a FILE is killed midway, then there is no FILE', async () => {
    // Arrange
    const dir = makeTempDir()
    dirs.push(dir)
    const env = largeStore(dir)
    const file = join(dir, 'first.db')

    // Act
    const killed = await killMidway(env, dir, file)

    // Assert
    assert.ok(killed, 'the backup was killed while its partial copy was being written')
    assert.equal(existsSync(file), false)
  })

  it('When FILE is in a folder that does not exist, or the store is not there, then backup exits 1 with one line saying which', async () => {
    // Arrange
    const dir = makeTempDir()
    dirs.push(dir)
    const env = { DATABASE_URL: sqliteUrl(dir) }
    await createUnlimitedKey(env, 'kept')

    // Act
    const noFolder = await runCli(['backup', join(dir, 'missing', 'backup.db')], env)
    const noStore = await runCli(['backup', join(dir, 'backup.db')], { DATABASE_URL: `sqlite:${join(dir, 'elsewhere.db')}` })

    // Assert
    assert.equal(noFolder.code, 1)
    assert.match(noFolder.stderr, /^petstore: cannot back up .*: the folder .*missing does not exist\n$/)
    assert.equal(noStore.code, 1)
    assert.match(noStore.stderr, /^petstore: cannot back up .*: there is no database at .*elsewhere\.db\n$/)
    assert.deepEqual(readdirSync(dir).filter((name) => !name.startsWith('p.db')), [])
  })

  it('When FILE is the live store reached another way (a symlinked folder, a symlink, a hard link, or its -wal or -shm file so reached), then backup exits 1 saying so, and the service goes on with its store whole (regression: through a symlinked folder the store was replaced and then malformed)', async () => {
    // Arrange: a service holding the store open, so that it has its -wal and -shm files.
    const dir = makeTempDir()
    const elsewhere = makeTempDir()
    dirs.push(dir, elsewhere)
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const store = databaseFile(dir)
    const key = await createUnlimitedKey(env, 'live')
    const server = await startServer(env)
    servers.push(server)
    assert.equal((await addPet(server.origin, key.token, 'there before')).status, 201)
    symlinkSync(dir, join(elsewhere, 'folder'))
    symlinkSync(store, join(elsewhere, 'symlink.db'))
    linkSync(store, join(elsewhere, 'hard-link.db'))
    linkSync(`${store}-wal`, join(elsewhere, 'hard-link.db-wal'))
    const files = ['folder/p.db', 'symlink.db', 'hard-link.db', 'folder/p.db-wal', 'folder/p.db-shm', 'hard-link.db-wal']
    const storeBefore = statSync(store, { bigint: true })

    // Act
    const outcomes: Array<[string, number | null, string]> = []
    for (const file of files) {
      const result = await runCli(['backup', join(elsewhere, file)], env)
      outcomes.push([file, result.code, result.stderr.replace(/^petstore: cannot back up .*?: /, '').trim()])
    }

    // Assert
    const companion = (file: string): string | undefined => /-(wal|shm)$/.exec(file)?.[0]
    assert.deepEqual(outcomes, files.map((file) => {
      const what = companion(file) === undefined ? 'the database itself' : `the database's ${companion(file)} file`
      return [file, 1, `the backup would overwrite ${what}; give another FILE`]
    }))
    const storeAfter = statSync(store, { bigint: true })
    assert.deepEqual([storeAfter.dev, storeAfter.ino], [storeBefore.dev, storeBefore.ino], 'the store is the same file')
    assert.equal((await addPet(server.origin, key.token, 'added after')).status, 201)
    const listed = await fetch(`${server.origin}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${key.token}` } })
    assert.equal(listed.status, 200)
    assert.deepEqual(((await listed.json()) as Array<{ name: string }>).map((pet) => pet.name), ['there before', 'added after'])
    await server.stop()
    assert.equal(integrityOf(store), 'ok')
    assert.deepEqual([...readdirSync(dir), ...readdirSync(elsewhere)].filter((name) => name.endsWith('.partial')), [])
  })

  it('When the store is on PostgreSQL, then backup exits non-zero and names pg_dump', async () => {
    // Act
    const result = await runCli(['backup', '/nonexistent/backup.db'], { DATABASE_URL: 'postgres://petstore@127.0.0.1:1/petstore' })

    // Assert
    assert.equal(result.code, 1)
    assert.match(result.stderr, /pg_dump/)
    assert.equal(result.stdout, '')
  })
})
