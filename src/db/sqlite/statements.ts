// The SQLite backend's statements, prepared once per connection and grouped
// by the part of Storage they serve; a write that spans statements is here
// too, as one transaction function. New animals are pet-inserts.ts's.
import type { PetStatus } from '../../domain.js'
import type { ApiKeyChanges, ApiKeyRecord, DeprecatedCalls, KeyUsage, NewApiKeyRecord } from '../storage.js'
import { KEY_COLUMNS, keyChangeSql, scopesColumn, toApiKey, type ApiKeyRow, type PetRow } from '../rows.js'
import type { Database } from './driver.js'
import { StatementPerLimit } from './statement-per-limit.js'

export type PetTuple = [id: bigint, name: string, categoryId: bigint, status: PetStatus]
/** A page written by SQLite: its JSON array and how many animals it holds. */
export type PageTuple = [json: string, count: bigint]

/**
 * A page's JSON, written by SQLite as the response schema's serializer would:
 * its keys in order, int64 exact, strings escaped as JSON.stringify does
 * (https://www.sqlite.org/json1.html#jobj); rows ordered inside the aggregate, where SQLite keeps the order.
 */
const PET_JSON = "json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status)"
const PAGE_JSON = `json_group_array(${PET_JSON} ORDER BY id)`

export type PetStatements = ReturnType<typeof petStatements>

export function petStatements (db: Database) {
  return {
    get: db.prepare<[bigint], PetRow>('SELECT id, name, category_id, status FROM pets WHERE id = ?'),
    getJson: db.prepare<[bigint], string>(`SELECT ${PET_JSON} FROM pets WHERE id = ?`).pluck(true),
    // Pages are read as arrays, not objects: a third cheaper per row.
    listAll: new StatementPerLimit((limit) => db.prepare<[bigint], PetTuple>(
      `SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ${limit}`).raw(true)),
    listByStatus: new StatementPerLimit((limit) => db.prepare<[string, bigint], PetTuple>(
      `SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit}`).raw(true)),
    pageAll: new StatementPerLimit((limit) => db.prepare<[bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ${limit})`).raw(true)),
    pageByStatus: new StatementPerLimit((limit) => db.prepare<[string, bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit})`).raw(true)),
    purgeIdempotency: db.prepare<[bigint]>('DELETE FROM idempotency_keys WHERE created_at <= ?')
  }
}

export type KeyStatements = ReturnType<typeof keyStatements>

export function keyStatements (db: Database) {
  const insert = db.prepare<[string, string, number | null, number | null, number | null, string, string, string, string, bigint, bigint | null]>(
    `INSERT INTO api_keys (name, plan, per_minute, per_day, concurrency, environment, scopes, token_hash, token_hint, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
  const get = db.prepare<[bigint], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`)
  const insertToken = db.prepare<[bigint, string]>('INSERT INTO api_key_tokens (api_key_id, token_hash) VALUES (?, ?)')
  return {
    // Two lookups by their unique indexes, rather than one `OR` the planner may scan for.
    find: db.prepare<[string, string], ApiKeyRow & { previous: bigint }>(
      `SELECT ${KEY_COLUMNS}, 0 AS previous FROM api_keys WHERE token_hash = ?
       UNION ALL SELECT ${KEY_COLUMNS}, 1 AS previous FROM api_keys WHERE previous_token_hash = ?`),
    get,
    findIssued: db.prepare<[string], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = (SELECT api_key_id FROM api_key_tokens WHERE token_hash = ?)`),
    // LIMIT -1: no limit.
    list: db.prepare<[bigint, number], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > ? ORDER BY id LIMIT ?`),
    // Every instance's index of tokens reads it every 500 ms: prepared once.
    listTokens: db.prepare<[bigint, number], [bigint, string]>('SELECT id, token_hash FROM api_key_tokens WHERE id > ? ORDER BY id LIMIT ?').raw(true),
    countTokens: db.prepare<[], { n: bigint }>('SELECT count(*) AS n FROM api_key_tokens'),
    // The key and its first token, together.
    create: db.transaction((key: NewApiKeyRecord): ApiKeyRecord => {
      const { id } = insert.get(key.name, key.plan, key.perMinute, key.perDay, key.concurrency, key.environment, scopesColumn(key.scopes),
        key.tokenHash, key.tokenHint, BigInt(key.createdAt), key.expiresAt === null ? null : BigInt(key.expiresAt)) as { id: bigint }
      insertToken.run(id, key.tokenHash)
      return toApiKey(get.get(id) as ApiKeyRow)
    }),
    change: db.transaction((id: bigint, change: (key: ApiKeyRecord) => ApiKeyChanges): ApiKeyRecord | undefined => {
      const row = get.get(id)
      if (row === undefined) return undefined
      const changes = change(toApiKey(row))
      const { set, values } = keyChangeSql(changes, () => '?')
      if (set === '') return toApiKey(row)
      // Changes are rare (an operator's request): the statement is prepared each time.
      db.prepare(`UPDATE api_keys SET ${set} WHERE id = ?`).run(...values.map(sqliteValue), id)
      if (changes.token !== undefined) insertToken.run(id, changes.token.hash)
      return toApiKey(get.get(id) as ApiKeyRow)
    })
  }
}

export type UsageStatements = ReturnType<typeof usageStatements>

export function usageStatements (db: Database) {
  const addDay = db.prepare<[bigint, bigint, bigint, bigint]>(
    `INSERT INTO key_usage (api_key_id, day, admitted, refused) VALUES (?, ?, ?, ?)
     ON CONFLICT (api_key_id, day) DO UPDATE SET admitted = admitted + excluded.admitted, refused = refused + excluded.refused`)
  const touch = db.prepare<[bigint, bigint, bigint]>('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND coalesce(last_used_at, 0) < ?')
  const addCalls = db.prepare<[bigint, string, bigint, bigint, bigint]>(
    `INSERT INTO deprecated_calls (api_key_id, operation, day, calls, last_call) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (api_key_id, operation, day) DO UPDATE SET calls = calls + excluded.calls, last_call = max(last_call, excluded.last_call)`)
  return {
    add: db.transaction((usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>, deprecatedCalls: readonly DeprecatedCalls[]) => {
      for (const { keyId, day, admitted, refused } of usage) addDay.run(BigInt(keyId), BigInt(day), BigInt(admitted), BigInt(refused))
      for (const [keyId, at] of lastUsed) touch.run(BigInt(at), BigInt(keyId), BigInt(at))
      for (const { keyId, operation, day, calls, lastCall } of deprecatedCalls) addCalls.run(BigInt(keyId), operation, BigInt(day), BigInt(calls), BigInt(lastCall))
    }),
    of: db.prepare<[bigint, bigint, bigint], [bigint, bigint, bigint, bigint]>(
      'SELECT api_key_id, day, admitted, refused FROM key_usage WHERE api_key_id = ? AND day BETWEEN ? AND ? ORDER BY day').raw(true)
  }
}

/** Whole numbers bound as SQLite integers (better-sqlite3 binds a number as a float). */
export function sqliteValue (value: unknown): unknown {
  return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value
}
