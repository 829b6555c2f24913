// The animals a benchmark lists, written straight into the database in one
// transaction, after the service's own migrations have made the schema: a
// million animals added over HTTP would take longer than the benchmark.
// Ids are assigned by the database as the service's inserts have them
// assigned (SQLite's AUTOINCREMENT, PostgreSQL's identity), so the animals
// the service adds afterwards still get fresh, increasing ids.
import pg from 'pg'
import { openStorage } from '../src/db/open.js'
import { Database } from '../src/db/sqlite/driver.js'

/** Beyond 2^53: an animal in a thousand has a category id a double cannot hold. */
const BIG_CATEGORY = 2n ** 53n

/** Animal `i` (from 1): half available, 30 % pending, 20 % sold, interleaved; 40 categories, a few int64 ones. */
function animal (i: number): [name: string, categoryId: bigint, status: string] {
  const categoryId = i % 1000 === 1 ? BIG_CATEGORY + BigInt(i) : BigInt(i % 40 + 1)
  const decile = i % 10
  return [`Pet ${i}`, categoryId, decile < 5 ? 'available' : decile < 8 ? 'pending' : 'sold']
}

export async function seedSqlite (file: string, animals: number): Promise<void> {
  await migrate(`sqlite:${file}`)
  const db = new Database(file)
  try {
    const insert = db.prepare<[string, bigint, string]>('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
    db.transaction(() => {
      for (let i = 1; i <= animals; i++) insert.run(...animal(i))
    })()
  } finally {
    db.close()
  }
}

/** The same animals as `animal` makes, in one INSERT … SELECT. */
export async function seedPostgres (url: string, animals: number): Promise<void> {
  await migrate(url)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`INSERT INTO pets (name, category_id, status)
      SELECT 'Pet ' || i,
             CASE WHEN i % 1000 = 1 THEN $2::bigint + i ELSE i % 40 + 1 END,
             CASE WHEN i % 10 < 5 THEN 'available' WHEN i % 10 < 8 THEN 'pending' ELSE 'sold' END
      FROM generate_series(1, $1::bigint) AS i`, [animals, BIG_CATEGORY.toString()])
    // As autovacuum would before long: the planner then knows the table's size.
    await client.query('ANALYZE pets')
  } finally {
    await client.end()
  }
}

async function migrate (url: string): Promise<void> {
  const storage = await openStorage(url, { poolSize: 1 })
  await storage.close()
}
