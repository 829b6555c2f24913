// The rows both backends read, column for column (the same schema, and
// every integer read as bigint), and the records they become. An animal's
// row is read as its record already (pet-columns.ts).
import type pg from 'pg'
import { inScopeOrder, type Environment, type EventType, type Plan } from '../domain.js'
import type { ApiKeyChanges, ApiKeyRecord, DeliveryOutcome, DeliveryRecord, DueDelivery, EventOf, KeyLeakRecord, NewEvent, WebhookChanges, WebhookRecord } from './storage.js'

/** PostgreSQL's int8 type. */
const INT8_OID = 20

/**
 * node-postgres's type parsers, but int8 (ids, categoryId, counts) read as
 * a BigInt, never rounded to a double. Takes the driver's `types` so that
 * a caller that loads `pg` lazily (db/copy.ts) need not load it here.
 */
export function int8AsBigInt (types: typeof pg.types): typeof pg.types.getTypeParser {
  return ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? BigInt : types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
}

export interface ApiKeyRow {
  id: bigint
  name: string
  plan: Plan
  per_minute: bigint | null
  per_day: bigint | null
  concurrency: bigint | null
  environment: Environment
  /** Space-separated, as OAuth writes scopes (RFC 6749 §3.3). */
  scopes: string
  token_hint: string
  created_at: bigint
  expires_at: bigint | null
  last_used_at: bigint | null
  revoked_at: bigint | null
  previous_token_expires_at: bigint | null
}

/** The columns an ApiKeyRow is read from. */
export const KEY_COLUMNS = 'id, name, plan, per_minute, per_day, concurrency, environment, scopes, token_hint, created_at, expires_at, last_used_at, revoked_at, previous_token_expires_at'

export interface KeyLeakRow { api_key_id: bigint, report: string, url: string | null, source: string | null, found_at: bigint }

/** The columns a KeyLeakRow is read from. */
export const LEAK_COLUMNS = 'api_key_id, report, url, source, found_at'

export function toKeyLeak (row: KeyLeakRow): KeyLeakRecord {
  return { keyId: Number(row.api_key_id), report: row.report, url: row.url, source: row.source, foundAt: Number(row.found_at) }
}

export function toApiKey (row: ApiKeyRow): ApiKeyRecord {
  return {
    id: Number(row.id),
    name: row.name,
    plan: row.plan,
    perMinute: row.per_minute === null ? null : Number(row.per_minute),
    perDay: row.per_day === null ? null : Number(row.per_day),
    concurrency: row.concurrency === null ? null : Number(row.concurrency),
    environment: row.environment,
    scopes: inScopeOrder(row.scopes.split(' ')),
    tokenHint: row.token_hint,
    createdAt: Number(row.created_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    previousTokenExpiresAt: row.previous_token_expires_at === null ? null : Number(row.previous_token_expires_at)
  }
}

/** A SET list being written: `assign` adds `column = <placeholder>`, numbered in the order of the values. */
function setList (param: (n: number) => string): { set: string[], values: unknown[], assign: (column: string, value: unknown) => void } {
  const set: string[] = []
  const values: unknown[] = []
  const assign = (column: string, value: unknown): void => {
    values.push(value)
    set.push(`${column} = ${param(values.length)}`)
  }
  return { set, values, assign }
}

/**
 * The SET list of an UPDATE making these changes, in the order of its values;
 * `param(n)` writes the n-th placeholder (`?` or `$n`). Column names come from
 * here alone, and right-hand sides read the row as it was, so the current token becomes the previous one.
 */
export function keyChangeSql (changes: ApiKeyChanges, param: (n: number) => string): { set: string, values: unknown[] } {
  const { set, values, assign } = setList(param)
  if (changes.name !== undefined) assign('name', changes.name)
  if (changes.plan !== undefined) assign('plan', changes.plan)
  if (changes.perMinute !== undefined) assign('per_minute', changes.perMinute)
  if (changes.perDay !== undefined) assign('per_day', changes.perDay)
  if (changes.concurrency !== undefined) assign('concurrency', changes.concurrency)
  if (changes.scopes !== undefined) assign('scopes', scopesColumn(changes.scopes))
  if (changes.expiresAt !== undefined) assign('expires_at', changes.expiresAt)
  if (changes.revokedAt !== undefined) assign('revoked_at', changes.revokedAt)
  const token = changes.token
  if (token !== undefined) {
    if (token.previousValidUntil === null) {
      set.push('previous_token_hash = NULL', 'previous_token_expires_at = NULL')
    } else {
      set.push('previous_token_hash = token_hash')
      assign('previous_token_expires_at', token.previousValidUntil)
    }
    assign('token_hash', token.hash)
    assign('token_hint', token.hint)
  }
  return { set: set.join(', '), values }
}

/** How scopes are stored: space-separated. */
export function scopesColumn (scopes: readonly string[]): string {
  return scopes.join(' ')
}

export interface WebhookRow {
  id: bigint
  url: string
  events: string | null
  description: string
  enabled: bigint
  secret: Buffer
  created_at: bigint
  updated_at: bigint
  previous_secret: Buffer | null
  previous_secret_expires_at: bigint | null
  failing_since: bigint | null
  disabled_reason: string | null
  disabled_at: bigint | null
}

export const WEBHOOK_COLUMNS = 'id, url, events, description, enabled, secret, created_at, updated_at, previous_secret, previous_secret_expires_at, ' +
  'failing_since, disabled_reason, disabled_at'

const orNull = (value: bigint | null): number | null => value === null ? null : Number(value)

export function toWebhook (row: WebhookRow): WebhookRecord {
  return {
    id: Number(row.id),
    url: row.url,
    events: row.events === null ? null : row.events.split(' ') as EventType[],
    description: row.description,
    enabled: row.enabled === 1n,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: orNull(row.previous_secret_expires_at),
    failingSince: orNull(row.failing_since),
    disabledReason: row.disabled_reason,
    disabledAt: orNull(row.disabled_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at)
  }
}

/**
 * Rolls an endpoint's secret, in SQL both backends run (its values: the
 * previous secret's end twice, the new secret, now, the id): the right-hand
 * sides read the row as it was.
 */
export function rollSecretSql (param: (n: number) => string): string {
  return `UPDATE webhook_endpoints SET previous_secret = CASE WHEN CAST(${param(1)} AS bigint) IS NULL THEN NULL ELSE secret END,
    previous_secret_expires_at = ${param(2)}, secret = ${param(3)}, updated_at = ${param(4)} WHERE id = ${param(5)} RETURNING ${WEBHOOK_COLUMNS}`
}

/** Per endpoint, of a batch of outcomes: whether any succeeded (its streak ends), else its first failure (a streak starts, unless one runs). */
export function failingStreaks (outcomes: readonly DeliveryOutcome[]): Array<{ endpointId: number, succeeded: boolean, failedAt: number }> {
  const streaks = new Map<number, { endpointId: number, succeeded: boolean, failedAt: number }>()
  for (const { endpointId, state, attemptedAt } of outcomes) {
    const streak = streaks.get(endpointId) ?? { endpointId, succeeded: false, failedAt: attemptedAt }
    if (state === 'succeeded') streak.succeeded = true
    else streak.failedAt = Math.min(streak.failedAt, attemptedAt)
    streaks.set(endpointId, streak)
  }
  return [...streaks.values()]
}

/** How an endpoint's event types are stored: space-separated, null for every type. */
export function eventsColumn (events: readonly EventType[] | null): string | null {
  return events === null ? null : events.join(' ')
}

/** The SET list of an UPDATE making these changes, as keyChangeSql writes a key's. */
export function webhookChangeSql (changes: WebhookChanges, param: (n: number) => string): { set: string, values: unknown[] } {
  const { set, values, assign } = setList(param)
  if (changes.url !== undefined) assign('url', changes.url)
  if (changes.events !== undefined) assign('events', eventsColumn(changes.events))
  if (changes.description !== undefined) assign('description', changes.description)
  if (changes.enabled !== undefined) {
    assign('enabled', changes.enabled ? 1 : 0)
    assign('failing_since', null)
    assign('disabled_reason', null)
    assign('disabled_at', null)
  }
  assign('updated_at', changes.updatedAt)
  return { set: set.join(', '), values }
}

export interface DueDeliveryRow {
  event_id: bigint
  endpoint_id: bigint
  attempts: bigint
  type: string
  created_at: bigint
  data: string
  url: string
  secret: Buffer
  previous_secret: Buffer | null
  previous_secret_expires_at: bigint | null
}

/** A due delivery's columns, of `webhook_deliveries d JOIN events e JOIN webhook_endpoints w`. */
export const DUE_DELIVERY_COLUMNS = 'd.event_id, d.endpoint_id, d.attempts, e.type, e.created_at, e.data, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at'

export function toDueDelivery (row: DueDeliveryRow): DueDelivery {
  return {
    eventId: row.event_id,
    endpointId: Number(row.endpoint_id),
    attempts: Number(row.attempts),
    type: row.type,
    createdAt: Number(row.created_at),
    data: row.data,
    url: row.url,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at)
  }
}

/**
 * Whether an endpoint whose types are stored as `events` wants an event of
 * type `type`, in SQL both backends run: null wants every type.
 */
export function wantsSql (events: string, type: string): string {
  return `(${events} IS NULL OR (' ' || ${events} || ' ') LIKE ('% ' || ${type} || ' %'))`
}

/**
 * Whether an enabled endpoint wants events of `type` (an SQL string), for
 * both backends: a change writes its event only then, so that a service
 * without one does not write, fan out and delete an event per new animal
 * (docs/WEBHOOKS.md, "Which events are kept").
 */
export function listenedSql (type: string): string {
  return `EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled = 1 AND ${wantsSql('w.events', type)})`
}

export interface DeliveryRow {
  event_id: bigint
  type: string
  created_at: bigint
  state: DeliveryRecord['state']
  attempts: bigint
  next_attempt_at: bigint
  last_status: bigint | null
  last_error: string | null
}

/** An endpoint's deliveries, newest first, below an event id; `param(n)` writes the n-th placeholder. */
/**
 * Keys not revoked whose expiry is in (param 1, param 2] and has no
 * announcement of type param 3: the periodic look for expiries to announce,
 * read through the partial index on expires_at.
 */
export function keysToAnnounceSql (param: (n: number) => string): string {
  return `SELECT ${KEY_COLUMNS} FROM api_keys k
    WHERE k.expires_at > ${param(1)} AND k.expires_at <= ${param(2)} AND k.revoked_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM key_announcements a WHERE a.api_key_id = k.id AND a.type = ${param(3)} AND a.at = k.expires_at)
    ORDER BY k.expires_at, k.id LIMIT ${param(4)}`
}

export function deliveriesSql (param: (n: number) => string): string {
  return `SELECT d.event_id, e.type, e.created_at, d.state, d.attempts, d.next_attempt_at, d.last_status, d.last_error
    FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.endpoint_id = ${param(1)} AND d.event_id < ${param(2)} ORDER BY d.event_id DESC LIMIT ${param(3)}`
}

export function toDelivery (row: DeliveryRow): DeliveryRecord {
  return {
    eventId: row.event_id,
    type: row.type,
    createdAt: Number(row.created_at),
    state: row.state,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error
  }
}

/** The events a change announces, as a list, whichever backend writes them. */
export function eventsOf<T> (event: EventOf<T> | undefined, record: T): readonly NewEvent[] {
  const made = event?.(record)
  if (made === undefined) return []
  return Array.isArray(made) ? made : [made as NewEvent]
}
