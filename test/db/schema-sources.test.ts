// The migrated schemas of both backends, read from live databases, against
// the lists they were written from by hand: the Pet schema's fields
// (db/pet-columns.ts) and the vocabulary of domain.ts. A field or a plan
// added to one side alone fails here (docs/DEVELOPING.md: Adding a field to the animal).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pg from 'pg'
import { ENVIRONMENTS, PET_STATUSES, PLANS } from '../../src/domain.js'
import { NEW_PET_COLUMNS, PET_COLUMNS } from '../../src/db/pet-columns.js'
import { migratePostgres } from '../../src/db/postgres/schema.js'
import { Database } from '../../src/db/sqlite/driver.js'
import { migrateSqlite } from '../../src/db/sqlite/schema.js'
import { NewPet, Pet } from '../../src/schemas/pet.js'
import { freshPostgresDatabase } from '../support/postgres.js'

interface LiveColumn { column: string, kind: string, notNull: boolean }

/** Each CHECK (column IN (…)) of the schemas, and the list it must allow. */
const ALLOWED_VALUES = [
  { table: 'pets', column: 'status', values: PET_STATUSES },
  { table: 'api_keys', column: 'plan', values: PLANS },
  { table: 'api_keys', column: 'environment', values: ENVIRONMENTS }
] as const

/** The columns a Pet's fields are stored in, as a live table would show them. */
const EXPECTED_COLUMNS: LiveColumn[] = PET_COLUMNS.map(({ column, kind }) => ({ column, kind, notNull: true }))

const byColumn = (a: LiveColumn, b: LiveColumn): number => a.column.localeCompare(b.column)
const quoted = (sql: string): string[] => [...sql.matchAll(/'([^']*)'/g)].map((match) => match[1] as string)

describe('the pets table\'s columns', () => {
  it('When they are read, then they are the Pet schema\'s fields in its order, each of its type, and a new animal\'s are NewPet\'s, in its order', () => {
    // Arrange
    const kindOf: Record<string, string> = { integer: 'int', string: 'text' }

    // Act
    const columns = PET_COLUMNS.map(({ field, kind }) => [field, kind])
    const newColumns = NEW_PET_COLUMNS.map(({ field }) => field)

    // Assert
    assert.deepEqual(columns, Object.entries(Pet.properties).map(([field, schema]) => [field, kindOf[String((schema as { type?: unknown }).type)]]))
    assert.deepEqual(newColumns, Object.keys(NewPet.properties))
  })
})

describe('the SQLite schema, migrated', () => {
  const db = new Database(':memory:')
  migrateSqlite(db)
  after(() => db.close())

  it('When the pets table is read, then its columns are the Pet schema\'s fields, each of its kind and NOT NULL', () => {
    // Arrange
    const kinds: Record<string, string> = { INTEGER: 'int', TEXT: 'text' }

    // Act
    const rows = db.prepare<[], { name: string, type: string, notnull: number, pk: number }>('SELECT name, type, "notnull", pk FROM pragma_table_info(\'pets\')').all()

    // Assert: an INTEGER PRIMARY KEY is the rowid, never null, though SQLite reports it nullable.
    const live = rows.map(({ name, type, notnull, pk }) => ({ column: name, kind: kinds[type] ?? type, notNull: notnull === 1 || pk > 0 }))
    assert.deepEqual(live.sort(byColumn), [...EXPECTED_COLUMNS].sort(byColumn))
  })

  it('When each CHECK of a column\'s values is read, then it allows exactly its list in domain.ts', () => {
    for (const { table, column, values } of ALLOWED_VALUES) {
      // Arrange
      const { sql } = db.prepare<[string], { sql: string }>('SELECT sql FROM sqlite_master WHERE type = \'table\' AND name = ?').get(table) ?? { sql: '' }

      // Act
      const check = new RegExp(`CHECK \\(${column} IN \\(([^)]*)\\)\\)`).exec(sql)

      // Assert
      assert.ok(check !== null, `${table}.${column} has no CHECK (${column} IN (…))`)
      assert.deepEqual(quoted(check[1] as string).sort(), [...values].sort(), `${table}.${column}'s CHECK`)
    }
  })
})

describe('the PostgreSQL schema, migrated', () => {
  let client: pg.Client | undefined
  before(async () => {
    client = new pg.Client({ connectionString: await freshPostgresDatabase() })
    await client.connect()
    await client.query('BEGIN')
    await migratePostgres(client)
    await client.query('COMMIT')
  })
  after(async () => { await client?.end() })

  const connected = (): pg.Client => {
    assert.ok(client !== undefined)
    return client
  }

  it('When the pets table is read, then its columns are the Pet schema\'s fields, each of its kind and NOT NULL', async () => {
    // Arrange
    const kinds: Record<string, string> = { bigint: 'int', text: 'text' }

    // Act
    const { rows } = await connected().query<{ column_name: string, data_type: string, is_nullable: string }>(
      'SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = \'pets\'')

    // Assert
    const live = rows.map((row) => ({ column: row.column_name, kind: kinds[row.data_type] ?? row.data_type, notNull: row.is_nullable === 'NO' }))
    assert.deepEqual(live.sort(byColumn), [...EXPECTED_COLUMNS].sort(byColumn))
  })

  it('When each CHECK of a column\'s values is read, then it allows exactly its list in domain.ts', async () => {
    for (const { table, column, values } of ALLOWED_VALUES) {
      // Arrange: PostgreSQL keeps `plan IN ('free', …)` as `plan = ANY (ARRAY['free'::text, …])`.
      const { rows } = await connected().query<{ definition: string }>(
        'SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = $1::regclass AND contype = \'c\'', [table])

      // Act
      const checks = rows.filter(({ definition }) => definition.startsWith(`CHECK ((${column} = ANY `))

      // Assert
      assert.equal(checks.length, 1, `${table}.${column} has no CHECK (${column} IN (…)), or several`)
      assert.deepEqual(quoted((checks[0] as { definition: string }).definition).sort(), [...values].sort(), `${table}.${column}'s CHECK`)
    }
  })
})
