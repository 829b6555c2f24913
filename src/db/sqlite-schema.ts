// The SQLite schema, as numbered migrations. Each runs once, inside a write
// transaction, so a second instance starting on the same file waits for the
// first and then finds nothing left to do.
import type { Database } from './sqlite-driver.js'

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE pets (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     category_id INTEGER NOT NULL CHECK (category_id >= 1),
     status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
   );
   CREATE INDEX pets_status_id ON pets (status, id);
   CREATE TABLE api_keys (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
     per_minute INTEGER CHECK (per_minute >= 1),
     per_day INTEGER CHECK (per_day >= 1),
     environment TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
     token_hash TEXT NOT NULL UNIQUE,
     created_at INTEGER NOT NULL,
     revoked_at INTEGER
   );
   CREATE TABLE idempotency_keys (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     key TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     pet_id INTEGER NOT NULL REFERENCES pets (id),
     created_at INTEGER NOT NULL,
     PRIMARY KEY (api_key_id, key)
   );
   CREATE TABLE secrets (
     name TEXT PRIMARY KEY,
     value BLOB NOT NULL
   );`
]

export function migrateSqlite (db: Database): void {
  db.transaction(() => {
    const current = Number(db.pragma('user_version', { simple: true }))
    MIGRATIONS.slice(current).forEach((sql) => db.exec(sql))
    db.pragma(`user_version = ${MIGRATIONS.length}`)
  }).immediate()
}
