// The SQLite backend's statements, prepared once per connection and grouped
// by the part of Storage they serve; a write that spans statements is here
// too, as one transaction function. New animals are pet-inserts.ts's.
import { PET_COLUMNS, PET_COLUMN_LIST, petSelectList } from '../pet-columns.js'
import type { ApiKeyChanges, PetRecord, ApiKeyRecord, ClaimQuery, DeliveryOutcome, DeprecatedCalls, DueDelivery, EventOf, KeyAnnouncement, KeyUsage, NewApiKeyRecord, NewEvent, NewWebhookRecord, WebhookChanges, WebhookRecord } from '../storage.js'
import {
  DUE_DELIVERY_COLUMNS, KEY_COLUMNS, WEBHOOK_COLUMNS, deliveriesSql, keysToAnnounceSql, eventsColumn, eventsOf, failingStreaks, rollSecretSql, keyChangeSql, scopesColumn, toApiKey, toDueDelivery, toWebhook, wantsSql, webhookChangeSql,
  type ApiKeyRow, type DeliveryRow, type DueDeliveryRow, type WebhookRow
} from '../rows.js'
import type { Database } from './driver.js'
import { StatementPerLimit } from './statement-per-limit.js'

/** A page written by SQLite: its JSON array and how many animals it holds. */
export type PageTuple = [json: string, count: bigint]

/**
 * A page's JSON, written by SQLite as the response schema's serializer would:
 * its keys in order, int64 exact, strings escaped as JSON.stringify does
 * (https://www.sqlite.org/json1.html#jobj); rows ordered inside the aggregate, where SQLite keeps the order.
 */
export const PET_JSON = `json_object(${PET_COLUMNS.map(({ field, column }) => `'${field}', ${column}`).join(', ')})`
const PET_SELECT = petSelectList()
const PAGE_JSON = `json_group_array(${PET_JSON} ORDER BY id)`

export type PetStatements = ReturnType<typeof petStatements>

export function petStatements (db: Database) {
  return {
    get: db.prepare<[bigint], PetRecord>(`SELECT ${PET_SELECT} FROM pets WHERE id = ?`),
    getJson: db.prepare<[bigint], string>(`SELECT ${PET_JSON} FROM pets WHERE id = ?`).pluck(true),
    // Read as records: the service lists through the pages below, as JSON.
    listAll: new StatementPerLimit((limit) => db.prepare<[bigint], PetRecord>(
      `SELECT ${PET_SELECT} FROM pets WHERE id > ? ORDER BY id LIMIT ${limit}`)),
    listByStatus: new StatementPerLimit((limit) => db.prepare<[string, bigint], PetRecord>(
      `SELECT ${PET_SELECT} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit}`)),
    pageAll: new StatementPerLimit((limit) => db.prepare<[bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT ${PET_COLUMN_LIST} FROM pets WHERE id > ? ORDER BY id LIMIT ${limit})`).raw(true)),
    pageByStatus: new StatementPerLimit((limit) => db.prepare<[string, bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT ${PET_COLUMN_LIST} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit})`).raw(true)),
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
  const announce = eventInsert(db)
  const written = (id: bigint, event: EventOf<ApiKeyRecord> | undefined): ApiKeyRecord => {
    const key = toApiKey(get.get(id) as ApiKeyRow)
    for (const made of eventsOf(event, key)) announce.run(made.type, BigInt(made.createdAt), made.data)
    return key
  }
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
    // The key, its first token and its event, together.
    create: db.transaction((key: NewApiKeyRecord, event: EventOf<ApiKeyRecord> | undefined): ApiKeyRecord => {
      const { id } = insert.get(key.name, key.plan, key.perMinute, key.perDay, key.concurrency, key.environment, scopesColumn(key.scopes),
        key.tokenHash, key.tokenHint, BigInt(key.createdAt), key.expiresAt === null ? null : BigInt(key.expiresAt)) as { id: bigint }
      insertToken.run(id, key.tokenHash)
      return written(id, event)
    }),
    change: db.transaction((id: bigint, change: (key: ApiKeyRecord) => ApiKeyChanges, event: EventOf<ApiKeyRecord> | undefined): ApiKeyRecord | undefined => {
      const row = get.get(id)
      if (row === undefined) return undefined
      const changes = change(toApiKey(row))
      const { set, values } = keyChangeSql(changes, () => '?')
      if (set === '') return toApiKey(row)
      // Changes are rare (an operator's request): the statement is prepared each time.
      db.prepare(`UPDATE api_keys SET ${set} WHERE id = ?`).run(...values.map(sqliteValue), id)
      if (changes.token !== undefined) insertToken.run(id, changes.token.hash)
      return written(id, event)
    })
  }
}

/** An event, written in the transaction of the change it announces. */
function eventInsert (db: Database) {
  return db.prepare<[string, bigint, string]>('INSERT INTO events (type, created_at, data) VALUES (?, ?, ?)')
}

export type WebhookStatements = ReturnType<typeof webhookStatements>

export function webhookStatements (db: Database) {
  const announce = eventInsert(db)
  const claimAnnouncement = db.prepare<[bigint, string, bigint]>('INSERT INTO key_announcements (api_key_id, type, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
  const get = db.prepare<[bigint], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id = ?`)
  const toFanOut = db.prepare<[bigint], bigint>('SELECT id FROM events WHERE fanned_out = 0 ORDER BY id LIMIT ?').pluck(true)
  const fanOut = db.prepare<[bigint, bigint, bigint]>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
     SELECT e.id, w.id, 'pending', 0, ? FROM events e JOIN webhook_endpoints w ON w.enabled = 1 AND ${wantsSql('w.events', 'e.type')}
     WHERE e.fanned_out = 0 AND e.id BETWEEN ? AND ?
     ON CONFLICT DO NOTHING`)
  const markFannedOut = db.prepare<[bigint, bigint]>('UPDATE events SET fanned_out = 1 WHERE fanned_out = 0 AND id BETWEEN ? AND ?')
  // No endpoint wanted it when it was fanned out: no one ever will be sent it.
  const forgetUnwanted = db.prepare<[bigint, bigint]>(
    `DELETE FROM events WHERE fanned_out = 0 AND id BETWEEN ? AND ?
     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)`)
  const lease = db.prepare<[bigint, bigint, bigint]>(
    'UPDATE webhook_deliveries SET next_attempt_at = ?, attempts = attempts + 1 WHERE event_id = ? AND endpoint_id = ?')
  // A success ends the streak; a failure starts one unless one runs.
  const streak = db.prepare<[bigint, bigint, bigint]>(
    'UPDATE webhook_endpoints SET failing_since = CASE WHEN ? = 1 THEN NULL ELSE COALESCE(failing_since, ?) END WHERE id = ?')
  const record = db.prepare<[string, bigint, bigint | null, string | null, bigint, bigint]>(
    'UPDATE webhook_deliveries SET state = ?, next_attempt_at = ?, last_status = ?, last_error = ? WHERE event_id = ? AND endpoint_id = ?')
  return {
    // Read first, outside a write transaction: an idle dispatcher never takes the write lock.
    anyToFanOut: db.prepare<[], bigint>('SELECT 1 FROM events WHERE fanned_out = 0 LIMIT 1').pluck(true),
    anyDue: db.prepare<[bigint], bigint>("SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? LIMIT 1").pluck(true),
    create: db.prepare<[string, string | null, string, bigint, Buffer, bigint, bigint], WebhookRow>(
      `INSERT INTO webhook_endpoints (url, events, description, enabled, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       RETURNING ${WEBHOOK_COLUMNS}`),
    get,
    list: db.prepare<[bigint, bigint], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id > ? ORDER BY id LIMIT ?`),
    change: db.transaction((id: bigint, changes: WebhookChanges): WebhookRecord | undefined => {
      const { set, values } = webhookChangeSql(changes, () => '?')
      // Changes are rare (an operator's request): the statement is prepared each time.
      const { changes: count } = db.prepare(`UPDATE webhook_endpoints SET ${set} WHERE id = ?`).run(...values.map(sqliteValue), id)
      return count === 0 ? undefined : toWebhook(get.get(id) as WebhookRow)
    }),
    rollSecret: db.prepare<[bigint | null, bigint | null, Buffer, bigint, bigint], WebhookRow>(rollSecretSql(() => '?')),
    remove: db.prepare<[bigint], WebhookRow>(`DELETE FROM webhook_endpoints WHERE id = ? RETURNING ${WEBHOOK_COLUMNS}`),
    fanOut: db.transaction((limit: number, now: number): number => {
      const ids = toFanOut.all(BigInt(limit))
      const first = ids[0]
      const last = ids[ids.length - 1]
      if (first === undefined || last === undefined) return 0
      fanOut.run(BigInt(now), first, last)
      forgetUnwanted.run(first, last)
      markFannedOut.run(first, last)
      return ids.length
    }),
    claim: db.transaction(({ now, leaseUntil, limit, skipEndpoints }: ClaimQuery): DueDelivery[] => {
      // Skipped endpoints vary with each claim: prepared each time, as a search is.
      const rows = db.prepare<unknown[], DueDeliveryRow>(
        `SELECT ${DUE_DELIVERY_COLUMNS} FROM webhook_deliveries d
         JOIN events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id
         WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND w.enabled = 1
           ${skipEndpoints.length === 0 ? '' : `AND d.endpoint_id NOT IN (${skipEndpoints.map(() => '?').join(', ')})`}
         ORDER BY d.next_attempt_at LIMIT ?`).all(BigInt(now), ...skipEndpoints.map(BigInt), BigInt(limit))
      for (const row of rows) lease.run(BigInt(leaseUntil), row.event_id, row.endpoint_id)
      return rows.map((row) => ({ ...toDueDelivery(row), attempts: Number(row.attempts) + 1 }))
    }),
    record: db.transaction((outcomes: readonly DeliveryOutcome[]) => {
      for (const outcome of outcomes) {
        record.run(outcome.state, BigInt(outcome.nextAttemptAt), outcome.lastStatus === null ? null : BigInt(outcome.lastStatus),
          outcome.lastError, outcome.eventId, BigInt(outcome.endpointId))
      }
      for (const { endpointId, succeeded, failedAt } of failingStreaks(outcomes)) {
        streak.run(succeeded ? 1n : 0n, BigInt(failedAt), BigInt(endpointId))
      }
    }),
    anyFailing: db.prepare<[bigint], bigint>('SELECT 1 FROM webhook_endpoints WHERE enabled = 1 AND failing_since <= ? LIMIT 1').pluck(true),
    disableFailing: db.transaction((failingSince: bigint, reason: (endpoint: WebhookRecord) => string, now: bigint): WebhookRecord[] => {
      const rows = db.prepare<[bigint], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE enabled = 1 AND failing_since <= ?`).all(failingSince)
      return rows.map((row) => {
        const why = reason(toWebhook(row))
        return toWebhook(db.prepare<[string, bigint, bigint], WebhookRow>(
          `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, disabled_at = ? WHERE id = ? RETURNING ${WEBHOOK_COLUMNS}`).get(why, now, row.id) as WebhookRow)
      })
    }),
    deliveries: db.prepare<[bigint, bigint, bigint], DeliveryRow>(deliveriesSql(() => '?')),
    // The row first: only the transaction that wrote it writes the event.
    announceOnce: db.transaction((once: KeyAnnouncement, event: NewEvent): boolean => {
      if (claimAnnouncement.run(BigInt(once.keyId), once.type, BigInt(once.at)).changes === 0) return false
      announce.run(event.type, BigInt(event.createdAt), event.data)
      return true
    }),
    keysToAnnounce: db.prepare<[bigint, bigint, string, bigint], ApiKeyRow>(keysToAnnounceSql(() => '?')),
    // Two lookups by index (the events to fan out, the pending deliveries), not a scan of every event kept.
    oldestUndelivered: db.prepare<[], bigint | null>(
      `SELECT MIN(created_at) AS created_at FROM events
       WHERE id = (SELECT MIN(id) FROM events WHERE fanned_out = 0)
       OR id = (SELECT MIN(d.event_id) FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.enabled = 1 WHERE d.state = 'pending')`).pluck(true),
    resend: db.prepare<[bigint, bigint, bigint]>(
      "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ? WHERE event_id = ? AND endpoint_id = ? AND state <> 'pending'"),
    // Marked fanned out as it is written: it is this endpoint's alone.
    addEndpointEvent: db.transaction((endpointId: bigint, type: string, createdAt: bigint, data: string): bigint | undefined => {
      if (get.get(endpointId) === undefined) return undefined
      const eventId = BigInt(db.prepare<[string, bigint, string]>('INSERT INTO events (type, created_at, data, fanned_out) VALUES (?, ?, ?, 1)')
        .run(type, createdAt, data).lastInsertRowid)
      db.prepare<[bigint, bigint, bigint]>("INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at) VALUES (?, ?, 'pending', 0, ?)")
        .run(eventId, endpointId, createdAt)
      return eventId
    }),
    purge: db.prepare<[bigint]>(
      `DELETE FROM events WHERE fanned_out = 1 AND created_at < ?
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id AND d.state = 'pending')`)
  }
}

/** An endpoint's row as SQLite binds it. */
export function webhookValues (webhook: NewWebhookRecord): [string, string | null, string, bigint, Buffer, bigint, bigint] {
  return [webhook.url, eventsColumn(webhook.events), webhook.description, webhook.enabled ? 1n : 0n, webhook.secret,
    BigInt(webhook.createdAt), BigInt(webhook.updatedAt)]
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
