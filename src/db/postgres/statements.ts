// The PostgreSQL backend's SQL, grouped by the part of Storage it serves.
// Only what varies with a call (a key's changes, a search's filters) is
// written where it runs, in storage.ts.
import { stateSql } from '../key-search.js'
import { NEW_PET_COLUMNS, NEW_PET_COLUMN_LIST, PET_COLUMNS, PET_COLUMN_LIST, petSelectList } from '../pet-columns.js'
import { DUE_DELIVERY_COLUMNS, KEY_COLUMNS, WEBHOOK_COLUMNS, keysToAnnounceSql, listenedSql, wantsSql } from '../rows.js'

const PET_SELECT = petSelectList()
/**
 * An animal as the API writes it, key for key and without spaces
 * (json_build_object would add them); to_json escapes the strings as
 * JSON.stringify does, and an int8 is written whole.
 */
const PET_JSON = `format('{${PET_COLUMNS.map(({ field }) => `"${field}":%s`).join(',')}}', ${
  PET_COLUMNS.map(({ column, kind }) => kind === 'int' ? column : `to_json(${column})`).join(', ')})`
/**
 * Each new animal's pet.created event, written by the statement that adds it: a 201 means the event is as
 * durable as the animal (docs/WEBHOOKS.md). None while no endpoint wants it. `pet`: the rows just added.
 */
const petEvents = (pet: string): string => `INSERT INTO events (type, created_at, data)
  SELECT 'pet.created', (extract(epoch from clock_timestamp()) * 1000)::bigint, ${PET_JSON} FROM ${pet}
  WHERE ${listenedSql("'pet.created'")}`
/** A page of animals as one JSON array (an empty one has no rows to join), and how many it holds: pet-json.ts cuts it. */
const PAGE_JSON = `coalesce('[' || string_agg(${PET_JSON}, ',' ORDER BY id) || ']', '[]') AS json, count(*) AS count`
const PG_TYPES = { int: 'int8', text: 'text' } as const

export const PET_SQL = {
  /**
   * Rows inserted in input order, so their identity values increase in that
   * order: sorted, the returned ids match the input whatever order RETURNING gives them in.
   */
  insertMany: `WITH pet AS (INSERT INTO pets (${NEW_PET_COLUMN_LIST})
    SELECT ${NEW_PET_COLUMN_LIST}
    FROM unnest(${NEW_PET_COLUMNS.map(({ kind }, i) => `$${i + 1}::${PG_TYPES[kind]}[]`).join(', ')}) WITH ORDINALITY AS input (${NEW_PET_COLUMN_LIST}, n)
    ORDER BY n
    RETURNING ${PET_COLUMN_LIST}
  ), event AS (${petEvents('pet')} ORDER BY id)
  SELECT id FROM pet`,
  insert: `WITH pet AS (INSERT INTO pets (${NEW_PET_COLUMN_LIST}) VALUES (${NEW_PET_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING ${PET_COLUMN_LIST}
    ), event AS (${petEvents('pet')})
    SELECT id FROM pet`,
  // Takes the key, or an expired record of it; waits for a concurrent
  // transaction holding it. No row back: a live record holds the key.
  claimIdempotency: `INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES ($1, $2, $3, NULL, $4)
    ON CONFLICT (api_key_id, key) DO UPDATE
      SET request_hash = excluded.request_hash, pet_id = NULL, created_at = excluded.created_at
      WHERE idempotency_keys.created_at <= $5
    RETURNING 1`,
  findIdempotent: `SELECT ${petSelectList('p')}, i.request_hash AS "requestHash"
    FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id
    WHERE i.api_key_id = $1 AND i.key = $2`,
  setIdempotentPet: 'UPDATE idempotency_keys SET pet_id = $3 WHERE api_key_id = $1 AND key = $2',
  get: `SELECT ${PET_SELECT} FROM pets WHERE id = $1`,
  listAll: `SELECT ${PET_SELECT} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
  listByStatus: `SELECT ${PET_SELECT} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
  getJson: `SELECT ${PET_JSON} AS json FROM pets WHERE id = $1`,
  pageAll: `SELECT ${PAGE_JSON} FROM (SELECT ${PET_COLUMN_LIST} FROM pets WHERE id > $1 ORDER BY id LIMIT $2) AS page`,
  pageByStatus: `SELECT ${PAGE_JSON} FROM (SELECT ${PET_COLUMN_LIST} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3) AS page`,
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

export const EVENT_SQL = {
  insert: 'INSERT INTO events (type, created_at, data) VALUES ($1, $2, $3)'
} as const

export const WEBHOOK_SQL = {
  create: `INSERT INTO webhook_endpoints (url, events, description, enabled, secret, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${WEBHOOK_COLUMNS}`,
  get: `SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id = $1`,
  list: `SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2`,
  remove: `DELETE FROM webhook_endpoints WHERE id = $1 RETURNING ${WEBHOOK_COLUMNS}`,
  // SKIP LOCKED: instances fanning out at once take different events; one
  // committed after a higher id was taken is still found, by its flag.
  fanOut: `WITH batch AS (
      SELECT id, type FROM events WHERE fanned_out = 0 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
    ), deliveries AS (
      INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
      SELECT b.id, w.id, 'pending', 0, $2 FROM batch b JOIN webhook_endpoints w ON w.enabled = 1 AND ${wantsSql('w.events', 'b.type')}
      ON CONFLICT DO NOTHING
    )
    UPDATE events SET fanned_out = 1 FROM batch WHERE events.id = batch.id RETURNING events.id`,
  // No endpoint wanted it when it was fanned out: no one ever will be sent it.
  forgetUnwanted: `DELETE FROM events WHERE id = ANY ($1::int8[])
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)`,
  // SKIP LOCKED: instances claiming at once take different deliveries, and
  // the lease (next_attempt_at moved ahead) keeps them apart after.
  claim: `WITH due AS (
      SELECT d.event_id, d.endpoint_id FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
      WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND w.enabled = 1 AND d.endpoint_id <> ALL ($4::int8[])
      ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED
    ), taken AS (
      UPDATE webhook_deliveries d SET next_attempt_at = $2, attempts = d.attempts + 1
      FROM due WHERE d.event_id = due.event_id AND d.endpoint_id = due.endpoint_id
      RETURNING d.event_id, d.endpoint_id, d.attempts
    )
    SELECT ${DUE_DELIVERY_COLUMNS} FROM taken d JOIN events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id`,
  record: `UPDATE webhook_deliveries d SET state = o.state, next_attempt_at = o.next_attempt_at, last_status = o.last_status, last_error = o.last_error
    FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::int8[], $6::int8[])
      AS o (state, next_attempt_at, last_status, last_error, event_id, endpoint_id)
    WHERE d.event_id = o.event_id AND d.endpoint_id = o.endpoint_id`,
  streaks: `UPDATE webhook_endpoints w SET failing_since = CASE WHEN o.succeeded THEN NULL ELSE COALESCE(w.failing_since, o.failed_at) END
    FROM unnest($1::int8[], $2::bool[], $3::int8[]) AS o (endpoint_id, succeeded, failed_at) WHERE w.id = o.endpoint_id`,
  resend: 'UPDATE webhook_deliveries SET state = \'pending\', next_attempt_at = $1 WHERE event_id = $2 AND endpoint_id = $3 AND state <> \'pending\'',
  // Marked fanned out as it is written: it is this endpoint's alone.
  addEndpointEvent: `WITH event AS (
      INSERT INTO events (type, created_at, data, fanned_out) SELECT $2, $3, $4, 1 FROM webhook_endpoints WHERE id = $1 RETURNING id
    )
    INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at) SELECT id, $1, 'pending', 0, $3 FROM event RETURNING event_id`,
  oldestUndelivered: `SELECT MIN(created_at) AS created_at FROM events
    WHERE id = (SELECT MIN(id) FROM events WHERE fanned_out = 0)
    OR id = (SELECT MIN(d.event_id) FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.enabled = 1 WHERE d.state = 'pending')`,
  purge: `DELETE FROM events WHERE fanned_out = 1 AND created_at < $1
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id AND d.state = 'pending')`,
  // One statement, so one transaction: the event only where the row was
  // written. An instance writing the same row at once waits on the primary
  // key for the first to commit, then writes neither.
  announceOnce: `WITH claimed AS (
      INSERT INTO key_announcements (api_key_id, type, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1
    )
    INSERT INTO events (type, created_at, data) SELECT $4, $5, $6 FROM claimed`,
  keysToAnnounce: keysToAnnounceSql((n) => `$${n}`)
} as const
