import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from '../../src/db/sqlite-driver.js'
import { openSqlite } from '../../src/db/sqlite.js'
import { StorageUnavailableError } from '../../src/errors.js'
import { buildTestApp, jsonHeaders } from '../support/app.js'
import { buildPet } from '../support/fixtures.js'
import { storageContract } from './storage-contract.js'

storageContract('sqlite', async () => openSqlite('sqlite::memory:'))

describe('SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

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
    const pet = await first.createPet({ name: 'shared', categoryId: 1n, status: 'available' })
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

    const pet = await storage.createPet({ name: 'waited', categoryId: 1n, status: 'available' })
    clearInterval(ticker)
    other.close()
    await storage.close()

    assert.equal(pet.name, 'waited')
    assert.ok(ticks >= 10, `the event loop ran ${ticks} timer ticks while the insert waited`)
  })

  it('When the lock outlasts the budget, then the write fails as unavailable and readiness says so until the lock is free again', async () => {
    const file = join(dir, 'stuck.db')
    const storage = openSqlite(`sqlite:${file}`, { busyBudgetMs: 200 })
    const other = new Database(file)
    other.exec('BEGIN IMMEDIATE')

    await assert.rejects(storage.createPet({ name: 'late', categoryId: 1n, status: 'available' }), StorageUnavailableError)
    await assert.rejects(storage.ping(), StorageUnavailableError)
    await assert.rejects(storage.revokeApiKey(1, 1), StorageUnavailableError)
    other.exec('ROLLBACK')
    other.close()
    await storage.ping()
    await storage.createPet({ name: 'now', categoryId: 1n, status: 'available' })
    await storage.close()
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

  it('When the file is reopened, then ids continue and are never reused', async () => {
    const path = `sqlite:${join(dir, 'ids.db')}`
    let storage = openSqlite(path)
    const a = await storage.createPet({ name: 'a', categoryId: 1n, status: 'available' })
    await storage.close()
    storage = openSqlite(path)
    const b = await storage.createPet({ name: 'b', categoryId: 1n, status: 'available' })
    await storage.close()
    assert.ok(b.id > a.id)
  })
})
