import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { openSqlite } from '../../src/db/sqlite.js'
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
