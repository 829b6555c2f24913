// The PostgreSQL backend's SQL, grouped by the part of Storage it serves.
// Only what varies with a call (a key's changes, a search's filters) is
// written where it runs, in storage.ts.
import { stateSql } from '../key-search.js'
import { KEY_COLUMNS } from '../rows.js'

const PET_COLUMNS = 'id, name, category_id, status'

export const PET_SQL = {
  /**
   * Rows inserted in input order, so their identity values increase in that
   * order: sorted, the returned ids match the input whatever order RETURNING gives them in.
   */
  insertMany: `INSERT INTO pets (name, category_id, status)
    SELECT name, category_id, status
    FROM unnest($1::text[], $2::int8[], $3::text[]) WITH ORDINALITY AS input (name, category_id, status, n)
    ORDER BY n
    RETURNING id`,
  insert: 'INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id',
  // Takes the key, or an expired record of it; waits for a concurrent
  // transaction holding it. No row back: a live record holds the key.
  claimIdempotency: `INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES ($1, $2, $3, NULL, $4)
    ON CONFLICT (api_key_id, key) DO UPDATE
      SET request_hash = excluded.request_hash, pet_id = NULL, created_at = excluded.created_at
      WHERE idempotency_keys.created_at <= $5
    RETURNING 1`,
  findIdempotent: `SELECT p.id, p.name, p.category_id, p.status, i.request_hash
    FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id
    WHERE i.api_key_id = $1 AND i.key = $2`,
  setIdempotentPet: 'UPDATE idempotency_keys SET pet_id = $3 WHERE api_key_id = $1 AND key = $2',
  get: `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1`,
  listAll: `SELECT ${PET_COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
  listByStatus: `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
  purgeIdempotency: 'DELETE FROM idempotency_keys WHERE created_at <= $1'
} as const

export const KEY_SQL = {
  // One statement, so one transaction: the key and its token are written together.
  create: `WITH key AS (
      INSERT INTO api_keys (name, plan, per_minute, per_day, environment, scopes, token_hash, token_hint, created_at, expires_at, concurrency)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${KEY_COLUMNS}
    ), token AS (
      INSERT INTO api_key_tokens (api_key_id, token_hash) SELECT id, $7 FROM key
    )
    SELECT * FROM key`,
  findByToken: `SELECT ${KEY_COLUMNS}, false AS previous FROM api_keys WHERE token_hash = $1
    UNION ALL SELECT ${KEY_COLUMNS}, true AS previous FROM api_keys WHERE previous_token_hash = $1`,
  findIssued: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = (SELECT api_key_id FROM api_key_tokens WHERE token_hash = $1)`,
  get: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`,
  // FOR UPDATE: a change made meanwhile by another instance waits for this one, and then reads what it wrote.
  getForUpdate: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`,
  // LIMIT NULL: no limit.
  list: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > $1 ORDER BY id LIMIT $2`,
  insertToken: 'INSERT INTO api_key_tokens (api_key_id, token_hash) VALUES ($1, $2)',
  listTokens: 'SELECT id, token_hash FROM api_key_tokens WHERE id > $1 ORDER BY id LIMIT $2',
  countTokens: 'SELECT count(*) AS n FROM api_key_tokens',
  countByState: `SELECT ${stateSql('$1')} AS state, plan, count(*) AS count FROM api_keys GROUP BY 1, 2 ORDER BY 1, 2`
} as const

// Each write over arrays: one round trip, however many keys.
export const USAGE_SQL = {
  add: `INSERT INTO key_usage (api_key_id, day, admitted, refused)
    SELECT * FROM unnest($1::int8[], $2::int4[], $3::int8[], $4::int8[])
    ON CONFLICT (api_key_id, day) DO UPDATE
      SET admitted = key_usage.admitted + excluded.admitted, refused = key_usage.refused + excluded.refused`,
  addCalls: `INSERT INTO deprecated_calls (api_key_id, operation, day, calls, last_call)
    SELECT * FROM unnest($1::int8[], $2::text[], $3::int4[], $4::int8[], $5::int8[])
    ON CONFLICT (api_key_id, operation, day) DO UPDATE
      SET calls = deprecated_calls.calls + excluded.calls, last_call = greatest(deprecated_calls.last_call, excluded.last_call)`,
  callers: `SELECT c.operation, ${KEY_COLUMNS.split(', ').map((column) => `k.${column}`).join(', ')}, c.calls, c.last_call
    FROM (SELECT operation, api_key_id, sum(calls) AS calls, max(last_call) AS last_call
          FROM deprecated_calls WHERE day BETWEEN $1 AND $2 GROUP BY operation, api_key_id) c
    JOIN api_keys k ON k.id = c.api_key_id
    ORDER BY c.operation, c.calls DESC, k.id`,
  touch: `UPDATE api_keys SET last_used_at = used.at
    FROM unnest($1::int8[], $2::int8[]) AS used (id, at)
    WHERE api_keys.id = used.id AND coalesce(api_keys.last_used_at, 0) < used.at`,
  of: 'SELECT day, admitted, refused FROM key_usage WHERE api_key_id = $1 AND day BETWEEN $2 AND $3 ORDER BY day',
  totals: 'SELECT day, sum(admitted) AS admitted, sum(refused) AS refused FROM key_usage WHERE day BETWEEN $1 AND $2 GROUP BY day ORDER BY day',
  busiest: `SELECT ${KEY_COLUMNS.split(', ').map((column) => `k.${column}`).join(', ')}, u.admitted, u.refused
    FROM key_usage u JOIN api_keys k ON k.id = u.api_key_id
    WHERE u.day = $1 ORDER BY u.admitted + u.refused DESC, k.id LIMIT $2`
} as const
