// The move from one store to another (docs/SCALING.md: The move from SQLite to PostgreSQL):
// every table that holds data, read from one snapshot of the source and
// written to the target in one transaction, which is committed only once
// the target was found empty and holds as many rows as the snapshot did.
// Either backend may be either side. Integers travel as bigint both ways,
// so no id or categoryId is ever rounded.
import { mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type pg from 'pg'
import { migratePostgres } from './postgres/schema.js'
import { PET_COLUMNS } from './pet-columns.js'
import { int8AsBigInt } from './rows.js'
import { Database, createOwnerOnly } from './sqlite/driver.js'
import { sqlitePath } from './sqlite/storage.js'
import { migrateSqlite } from './sqlite/schema.js'

type Kind = 'int' | 'text' | 'blob'
type Value = bigint | string | Buffer | null
type Row = Value[]

interface Table {
  name: string
  columns: ReadonlyArray<readonly [string, Kind]>
  /** The primary key: the order rows are read in. */
  order: readonly string[]
  /** The table's id comes from a sequence, which the target must continue. */
  sequence: boolean
}

/** Every table that holds data, parents before the tables that refer to them. */
export const COPIED_TABLES: readonly Table[] = [
  {
    name: 'api_keys',
    columns: [
      ['id', 'int'], ['name', 'text'], ['plan', 'text'], ['per_minute', 'int'], ['per_day', 'int'], ['environment', 'text'],
      ['token_hash', 'text'], ['created_at', 'int'], ['revoked_at', 'int'], ['scopes', 'text'], ['expires_at', 'int'],
      ['last_used_at', 'int'], ['token_hint', 'text'], ['previous_token_hash', 'text'], ['previous_token_expires_at', 'int'],
      ['concurrency', 'int']
    ],
    order: ['id'],
    sequence: true
  },
  { name: 'api_key_tokens', columns: [['id', 'int'], ['api_key_id', 'int'], ['token_hash', 'text']], order: ['id'], sequence: true },
  { name: 'pets', columns: PET_COLUMNS.map(({ column, kind }) => [column, kind] as const), order: ['id'], sequence: true },
  {
    name: 'idempotency_keys',
    columns: [['api_key_id', 'int'], ['key', 'text'], ['request_hash', 'text'], ['pet_id', 'int'], ['created_at', 'int']],
    order: ['api_key_id', 'key'],
    sequence: false
  },
  {
    name: 'key_usage',
    columns: [['api_key_id', 'int'], ['day', 'int'], ['admitted', 'int'], ['refused', 'int']],
    order: ['api_key_id', 'day'],
    sequence: false
  },
  {
    name: 'deprecated_calls',
    columns: [['api_key_id', 'int'], ['operation', 'text'], ['day', 'int'], ['calls', 'int'], ['last_call', 'int']],
    order: ['api_key_id', 'operation', 'day'],
    sequence: false
  },
  // Webhook endpoints with their secrets, and the events not yet delivered
  // with their deliveries: a move loses no announced change, and event ids
  // (receivers' webhook-id) go on from the source's, never repeating one.
  {
    name: 'webhook_endpoints',
    columns: [['id', 'int'], ['url', 'text'], ['events', 'text'], ['description', 'text'], ['enabled', 'int'], ['secret', 'blob'],
      ['created_at', 'int'], ['updated_at', 'int'], ['previous_secret', 'blob'], ['previous_secret_expires_at', 'int'],
      ['failing_since', 'int'], ['disabled_reason', 'text'], ['disabled_at', 'int']],
    order: ['id'],
    sequence: true
  },
  { name: 'events', columns: [['id', 'int'], ['type', 'text'], ['created_at', 'int'], ['data', 'text'], ['fanned_out', 'int']], order: ['id'], sequence: true },
  {
    name: 'webhook_deliveries',
    columns: [['event_id', 'int'], ['endpoint_id', 'int'], ['state', 'text'], ['attempts', 'int'], ['next_attempt_at', 'int'],
      ['last_status', 'int'], ['last_error', 'text']],
    order: ['event_id', 'endpoint_id'],
    sequence: false
  },
  {
    name: 'key_leaks',
    columns: [['api_key_id', 'int'], ['report', 'text'], ['url', 'text'], ['source', 'text'], ['found_at', 'int']],
    order: ['api_key_id', 'report'],
    sequence: false
  },
  // What was announced of each key: without it, the target would announce
  // again today's quota events and the expiries already announced.
  {
    name: 'key_announcements',
    columns: [['api_key_id', 'int'], ['type', 'text'], ['at', 'int']],
    order: ['api_key_id', 'type', 'at'],
    sequence: false
  },
  // The cursor secret: cursors handed out by the source go on working.
  { name: 'secrets', columns: [['name', 'text'], ['value', 'blob']], order: ['name'], sequence: false }
]

/** Tables of the schemas that hold no data of the service's: each backend's own bookkeeping. */
export const UNCOPIED_TABLES: readonly string[] = ['schema_migrations', 'sqlite_sequence']

/** Rows read and written at a time. */
const BATCH = 1000

/** The copy could not be made as asked; nothing was written to the target. */
class CopyRefused extends Error {
  override name = 'CopyRefused'
}

export type TableCounts = Map<string, bigint>

interface Snapshot {
  counts: TableCounts
  /** Per table with a sequence: the highest id it has handed out, 0 for none. */
  highestIds: Map<string, bigint>
  rows: (table: Table) => AsyncIterable<Row[]>
  close: () => Promise<void>
}

interface Target {
  /** Rows already in the tables a copy refuses to write over. */
  occupied: () => Promise<{ keys: bigint, pets: bigint }>
  insert: (table: Table, rows: Row[]) => Promise<void>
  /** The next id the table's sequence gives follows `highest`. */
  continueAfter: (table: Table, highest: bigint) => Promise<void>
  count: (table: string) => Promise<bigint>
  commit: () => Promise<void>
  /** Rolls back whatever is not committed and closes. */
  close: () => Promise<void>
}

const columnList = (table: Table): string => table.columns.map(([name]) => name).join(', ')
const orderList = (table: Table): string => table.order.join(', ')

function asBigint (value: unknown): bigint | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'bigint') return value
  if (typeof value === 'number' || typeof value === 'string') return BigInt(value)
  throw new TypeError(`not an integer: ${typeof value}`)
}

function normalise (table: Table, raw: unknown[]): Row {
  return table.columns.map(([, kind], i) => {
    const value = raw[i]
    if (value === null || value === undefined) return null
    if (kind === 'int') return asBigint(value)
    if (kind === 'blob') return Buffer.isBuffer(value) ? value : Buffer.from(value as Uint8Array)
    return String(value)
  })
}

function isPostgres (url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url)
}

// ---------------------------------------------------------------------------
// SQLite

/** The path of a SQLite store given by URL; refuses one that cannot hold a store past this command. */
function sqliteFile (url: string, role: 'source' | 'target'): string {
  const path = sqlitePath(url)
  if (path === ':memory:') throw new CopyRefused(`the ${role} sqlite::memory: lasts only as long as this command`)
  if (role === 'source' && statSync(path, { throwIfNoEntry: false }) === undefined) {
    throw new CopyRefused(`there is no database at ${path}`)
  }
  if (role === 'target' && statSync(dirname(resolve(path)), { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new CopyRefused(`the folder ${dirname(resolve(path))} does not exist`)
  }
  return path
}

function openSqliteDatabase (path: string): Database {
  // As the service makes it (db/sqlite/storage.ts): the file holds key hashes and the cursor secret.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  createOwnerOnly(path)
  const db = new Database(path, { timeout: 5000 })
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.defaultSafeIntegers(true)
  return db
}

function sqliteSnapshot (url: string): Snapshot {
  const db = openSqliteDatabase(sqliteFile(url, 'source'))
  migrateSqlite(db)
  // A read transaction: every read below sees the database as of its first
  // read, whatever the service commits meanwhile (WAL mode).
  db.exec('BEGIN')
  const count = (table: string): bigint => db.prepare<[], bigint>(`SELECT count(*) FROM ${table}`).pluck().get() ?? 0n
  const counts: TableCounts = new Map(COPIED_TABLES.map((table) => [table.name, count(table.name)]))
  const highestIds = new Map<string, bigint>()
  for (const table of COPIED_TABLES.filter((t) => t.sequence)) {
    const used = db.prepare<[string], bigint>('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table.name) ?? 0n
    const highest = db.prepare<[], bigint | null>(`SELECT max(id) FROM ${table.name}`).pluck().get() ?? 0n
    highestIds.set(table.name, used > highest ? used : highest)
  }
  return {
    counts,
    highestIds,
    async * rows (table) {
      const statement = db.prepare<[], unknown[]>(`SELECT ${columnList(table)} FROM ${table.name} ORDER BY ${orderList(table)}`).raw(true)
      let batch: Row[] = []
      for (const raw of statement.iterate()) {
        batch.push(normalise(table, raw))
        if (batch.length === BATCH) {
          yield batch
          batch = []
        }
      }
      if (batch.length > 0) yield batch
    },
    async close () {
      if (db.inTransaction) db.exec('ROLLBACK')
      db.close()
    }
  }
}

function sqliteTarget (url: string): Target {
  const db = openSqliteDatabase(sqliteFile(url, 'target'))
  // One write transaction from the migrations to the last row: a refused
  // or failed copy leaves the file as it was.
  db.exec('BEGIN IMMEDIATE')
  migrateSqlite(db)
  const statements = new Map<string, { run: (...values: Value[]) => unknown }>()
  return {
    async occupied () {
      const count = (table: string): bigint => db.prepare<[], bigint>(`SELECT count(*) FROM ${table}`).pluck().get() ?? 0n
      return { keys: count('api_keys'), pets: count('pets') }
    },
    async insert (table, rows) {
      let statement = statements.get(table.name)
      if (statement === undefined) {
        // The one table a service may have filled before the copy: the source's secret replaces it.
        const verb = table.name === 'secrets' ? 'INSERT OR REPLACE' : 'INSERT'
        statement = db.prepare<Value[]>(`${verb} INTO ${table.name} (${columnList(table)}) VALUES (${table.columns.map(() => '?').join(', ')})`)
        statements.set(table.name, statement)
      }
      for (const row of rows) statement.run(...row)
    },
    async continueAfter (table, highest) {
      // AUTOINCREMENT keeps the highest id it has given in sqlite_sequence; inserting ids has raised it to the highest copied.
      db.prepare('INSERT INTO sqlite_sequence (name, seq) SELECT ?, 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)')
        .run(table.name, table.name)
      db.prepare('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(highest, table.name)
    },
    async count (table) {
      return db.prepare<[], bigint>(`SELECT count(*) FROM ${table}`).pluck().get() ?? 0n
    },
    async commit () {
      db.exec('COMMIT')
    },
    async close () {
      if (db.inTransaction) db.exec('ROLLBACK')
      db.close()
    }
  }
}

// ---------------------------------------------------------------------------
// PostgreSQL

/**
 * Connects, opens a transaction and applies the migrations, then hands the
 * client to `setUp`; the client is ended if any of it fails, so a refused
 * side leaves no connection behind.
 */
async function onMigrated<T> (url: string, setUp: (client: pg.Client) => Promise<T>): Promise<T> {
  // Loaded only when a side is PostgreSQL, as the service loads it (db/open.ts).
  const { default: pgModule } = await import('pg')
  const client = new pgModule.Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    options: '-c synchronous_commit=on',
    types: {
      getTypeParser: int8AsBigInt(pgModule.types)
    }
  })
  await client.connect()
  try {
    await client.query('BEGIN')
    await migratePostgres(client)
    return await setUp(client)
  } catch (error) {
    await client.end()
    throw error
  }
}

async function postgresSnapshot (url: string): Promise<Snapshot> {
  return await onMigrated(url, async (client) => {
    await client.query('COMMIT')
    // Every statement of a REPEATABLE READ transaction sees the snapshot taken at its first.
    // https://www.postgresql.org/docs/current/transaction-iso.html#XACT-REPEATABLE-READ
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const counts: TableCounts = new Map()
    for (const table of COPIED_TABLES) {
      const { rows } = await client.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table.name}`)
      counts.set(table.name, rows[0]?.n ?? 0n)
    }
    const highestIds = new Map<string, bigint>()
    for (const table of COPIED_TABLES.filter((t) => t.sequence)) {
      // A sequence is outside every snapshot: what it has handed out may pass the snapshot's highest id, never fall below it.
      const { rows } = await client.query<{ highest: bigint | null, used: bigint | null }>(
        `SELECT (SELECT max(id) FROM ${table.name}) AS highest,
                (SELECT last_value FROM pg_sequences
                  WHERE format('%I.%I', schemaname, sequencename) = pg_get_serial_sequence($1, 'id')) AS used`, [table.name])
      const { highest, used } = rows[0] ?? { highest: null, used: null }
      highestIds.set(table.name, [highest ?? 0n, used ?? 0n].reduce((a, b) => (a > b ? a : b)))
    }
    return {
      counts,
      highestIds,
      async * rows (table) {
        const cursor = `copy_${table.name}`
        await client.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${columnList(table)} FROM ${table.name} ORDER BY ${orderList(table)}`)
        for (;;) {
          const { rows } = await client.query<unknown[]>({ text: `FETCH ${BATCH} FROM ${cursor}`, rowMode: 'array' })
          if (rows.length === 0) break
          yield rows.map((raw) => normalise(table, raw))
        }
        await client.query(`CLOSE ${cursor}`)
      },
      async close () {
        await client.end()
      }
    }
  })
}

async function postgresTarget (url: string): Promise<Target> {
  // One transaction from the migrations to the last row, as on SQLite.
  const client = await onMigrated(url, async (migrated) => {
    // No service on the target may add a key or an animal while it is found empty and filled.
    await migrated.query(`LOCK TABLE ${COPIED_TABLES.map((table) => table.name).join(', ')} IN SHARE ROW EXCLUSIVE MODE`)
    return migrated
  })
  const toParameter = (value: Value): string | Buffer | null => (typeof value === 'bigint' ? value.toString() : value)
  return {
    async occupied () {
      const { rows } = await client.query<{ keys: bigint, pets: bigint }>(
        'SELECT (SELECT count(*) FROM api_keys) AS keys, (SELECT count(*) FROM pets) AS pets')
      return rows[0] ?? { keys: 0n, pets: 0n }
    },
    async insert (table, rows) {
      const width = table.columns.length
      const values = rows.map((_, r) => `(${table.columns.map((__, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ')
      const conflict = table.name === 'secrets' ? ' ON CONFLICT (name) DO UPDATE SET value = excluded.value' : ''
      await client.query(`INSERT INTO ${table.name} (${columnList(table)}) VALUES ${values}${conflict}`, rows.flat().map(toParameter))
    },
    async continueAfter (table, highest) {
      if (highest > 0n) await client.query(`SELECT setval(pg_get_serial_sequence('${table.name}', 'id'), $1)`, [highest.toString()])
    },
    async count (table) {
      const { rows } = await client.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`)
      return rows[0]?.n ?? 0n
    },
    async commit () {
      await client.query('COMMIT')
    },
    async close () {
      // Ending the connection rolls back a transaction still open.
      await client.end()
    }
  }
}

// ---------------------------------------------------------------------------

/**
 * Copies the store at `sourceUrl` into the empty store at `targetUrl` and
 * gives the rows copied per table. Throws CopyRefused, with nothing
 * written, when the target holds a key or an animal.
 */
export async function copyStore (sourceUrl: string, targetUrl: string): Promise<TableCounts> {
  const snapshot = isPostgres(sourceUrl) ? await postgresSnapshot(sourceUrl) : sqliteSnapshot(sourceUrl)
  try {
    const target = isPostgres(targetUrl) ? await postgresTarget(targetUrl) : sqliteTarget(targetUrl)
    try {
      const { keys, pets } = await target.occupied()
      if (keys > 0n || pets > 0n) {
        throw new CopyRefused(`the target holds ${keys} keys and ${pets} pets; copy-store copies only into an empty store, and wrote nothing`)
      }
      for (const table of COPIED_TABLES) {
        let read = 0n
        for await (const rows of snapshot.rows(table)) {
          await target.insert(table, rows)
          read += BigInt(rows.length)
        }
        if (read !== snapshot.counts.get(table.name)) {
          throw new Error(`${table.name}: read ${read} rows of the ${snapshot.counts.get(table.name) ?? 0n} the snapshot counted`)
        }
        if (table.sequence) await target.continueAfter(table, snapshot.highestIds.get(table.name) ?? 0n)
      }
      for (const table of COPIED_TABLES) {
        const written = await target.count(table.name)
        if (written !== snapshot.counts.get(table.name)) {
          throw new Error(`${table.name}: the target holds ${written} rows, the source ${snapshot.counts.get(table.name) ?? 0n}; nothing was written`)
        }
      }
      await target.commit()
      return snapshot.counts
    } finally {
      await target.close()
    }
  } finally {
    await snapshot.close()
  }
}
