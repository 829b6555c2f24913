#!/usr/bin/env node
// The two SQLite drivers the service could use on Node 22 and later, measured
// on the service's own queries: better-sqlite3 (what it uses) and the
// built-in node:sqlite. Each run makes a fresh WAL database with
// synchronous=FULL and 100,000 animals whose int64 values are read as bigint.
//
//   node bench/sqlite-drivers.js better-sqlite3
//   node bench/sqlite-drivers.js node:sqlite
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const DRIVERS = ['better-sqlite3', 'node:sqlite']
const driver = process.argv[2]
if (Number(process.versions.node.split('.')[0]) < 22) {
  console.error('node bench/sqlite-drivers.js needs Node.js 22 or later: neither driver measured here runs on older ones')
  process.exit(2)
}
if (!DRIVERS.includes(driver)) {
  console.error(`usage: node bench/sqlite-drivers.js ${DRIVERS.join('|')}`)
  process.exit(2)
}

const SCHEMA = `CREATE TABLE pets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
  category_id INTEGER NOT NULL, status TEXT NOT NULL);
CREATE INDEX pets_status_id ON pets (status, id);`
const LIST = 'SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?'
const LIST_BY_STATUS = 'SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?'
const GET = 'SELECT id, name, category_id, status FROM pets WHERE id = ?'
const INSERT = 'INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id'
const INT64_MAX = 9223372036854775807n
const STATUSES = ['available', 'pending', 'sold']

async function open (path) {
  if (driver === 'better-sqlite3') {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.defaultSafeIntegers(true)
    db.exec(SCHEMA)
    const [list, listByStatus] = [LIST, LIST_BY_STATUS].map((sql) => db.prepare(sql).raw(true))
    const [get, insert] = [GET, INSERT].map((sql) => db.prepare(sql))
    return {
      list: (afterId, limit) => list.all(afterId, limit),
      listByStatus: (status, afterId, limit) => listByStatus.all(status, afterId, limit),
      get: (id) => get.get(id),
      insert: (name, categoryId, status) => insert.get(name, categoryId, status),
      transaction: (work) => db.transaction(work).immediate()
    }
  }
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(path)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  db.exec(SCHEMA)
  const prepare = (sql, arrays) => {
    const statement = db.prepare(sql)
    statement.setReadBigInts(true)
    if (arrays) statement.setReturnArrays(true)
    return statement
  }
  const [list, listByStatus] = [LIST, LIST_BY_STATUS].map((sql) => prepare(sql, true))
  const [get, insert] = [GET, INSERT].map((sql) => prepare(sql, false))
  return {
    list: (afterId, limit) => list.all(afterId, limit),
    listByStatus: (status, afterId, limit) => listByStatus.all(status, afterId, limit),
    get: (id) => get.get(id),
    insert: (name, categoryId, status) => insert.get(name, categoryId, status),
    transaction: (work) => {
      db.exec('BEGIN IMMEDIATE')
      try {
        const result = work()
        db.exec('COMMIT')
        return result
      } catch (error) {
        db.exec('ROLLBACK')
        throw error
      }
    }
  }
}

function time (label, iterations, work) {
  for (let i = 0; i < Math.min(iterations, 5000); i++) work(i)
  const start = process.hrtime.bigint()
  for (let i = 0; i < iterations; i++) work(i)
  const microseconds = Number(process.hrtime.bigint() - start) / iterations / 1000
  console.log(`${driver}\tNode ${process.versions.node}\t${label}\t${microseconds.toFixed(2)} µs`)
}

const dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-drivers-'))
try {
  const db = await open(join(dir, 'bench.db'))
  for (let batch = 0; batch < 100; batch++) {
    db.transaction(() => {
      for (let i = 0; i < 1000; i++) db.insert(`Pet ${i}`, INT64_MAX - BigInt(i), STATUSES[i % 3])
    })
  }
  const [first] = db.list(0n, 1)
  if (first?.[2] !== INT64_MAX) throw new Error(`int64 not read exactly: ${first}`)
  const deep = (i) => BigInt((i * 7919) % 99_000)
  time('a page of 20, from the start', 100_000, () => db.list(0n, 20))
  time('a page of 20, from a random cursor', 100_000, (i) => db.list(deep(i), 20))
  time('a page of 20 with status=sold', 100_000, (i) => db.listByStatus('sold', deep(i), 20))
  time('one animal by id', 200_000, (i) => db.get(1n + deep(i)))
  time('a commit of 32 inserts', 300, () => db.transaction(() => {
    for (let i = 0; i < 32; i++) db.insert('New', 1n, 'available')
  }))
  time('a commit of 1 insert', 300, () => db.transaction(() => db.insert('New', 1n, 'available')))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
