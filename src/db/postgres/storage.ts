// The shared backend: PostgreSQL through a node-postgres pool, one database
// for any number of instances. Ids come back as bigint, a 201 means the commit
// is on disk, and an unreachable database is a 503; how creates are batched and
// kept idempotent: docs/INTERNALS.md, section "PostgreSQL".
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { StorageUnavailableError } from '../../errors.js'
import { classifyPostgresError } from './errors.js'
import { migratePostgres } from './schema.js'
import { PoolWaits } from './pool-waits.js'
import type {
  ApiKeyChanges, ApiKeyMatch, ApiKeyRecord, CreateOnceResult, IdempotencyRecord, ListPetsQuery, NewApiKeyRecord, NewPetRecord,
  IssuedToken, KeyUsage, PetPageJson, PetPageQuery, PetRecord, PoolUse, Storage,
  ClaimQuery, DeliveryOutcome, DeliveryRecord, DueDelivery, EventOf, KeyAnnouncement, NewEvent, NewWebhookRecord, WebhookChanges, WebhookRecord
} from '../storage.js'
import type { EventType } from '../../domain.js'
import type { DayTotals, DeprecatedCaller, DeprecatedCalls, KeyCount, KeyDayUsage, KeyLeakRecord, KeySearch } from '../storage.js'
import { keySearchSql } from '../key-search.js'
import { NEW_PET_COLUMNS, newPetValues } from '../pet-columns.js'
import {
  KEY_COLUMNS, LEAK_COLUMNS, WEBHOOK_COLUMNS, deliveriesSql, eventsColumn, eventsOf, failingStreaks, rollSecretSql, toDelivery, int8AsBigInt, keyChangeSql, scopesColumn, toApiKey, toDueDelivery, toKeyLeak, toWebhook, webhookChangeSql,
  type ApiKeyRow, type DeliveryRow, type DueDeliveryRow, type KeyLeakRow, type WebhookRow
} from '../rows.js'
import { EVENT_SQL, KEY_SQL, PET_SQL, USAGE_SQL, WEBHOOK_SQL } from './statements.js'
import { KeptAnimals, KeptPages, cutPage, isFinalPage } from '../pet-json.js'

export interface PostgresOptions {
  /** How long a call waits for a connection, and then for an answer, before it fails as unavailable. */
  timeoutMs?: number
  /** Connections this instance may hold. */
  poolSize?: number
  /** Monotonic milliseconds, for how long operations wait for a connection; injected so that tests control it. */
  clock?: () => number
}

const DEFAULT_TIMEOUT_MS = 5000
const DELIVERIES_SQL = deliveriesSql((n) => `$${n}`)
const ROLL_SECRET_SQL = rollSecretSql((n) => `$${n}`)
const DEFAULT_POOL_SIZE = 10
/** Rows in one multi-row INSERT; a larger group is split. */
const MAX_GROUP = 1000

/** A page written by PostgreSQL (statements.ts PAGE_JSON). */
interface PageRow {
  json: string
  count: bigint
}

interface PendingInsert {
  pet: NewPetRecord
  resolve: (pet: PetRecord) => void
  reject: (error: unknown) => void
}

export async function openPostgres (
  url: string, { timeoutMs = DEFAULT_TIMEOUT_MS, poolSize = DEFAULT_POOL_SIZE, clock = () => performance.now() }: PostgresOptions = {}
): Promise<PostgresStorage> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: timeoutMs,
    // Client side, for a server that stopped answering (frozen, partitioned);
    // the server's own statement_timeout cannot fire then.
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    idleTimeoutMillis: 30_000,
    options: '-c synchronous_commit=on',
    types: {
      getTypeParser: int8AsBigInt(pg.types)
    }
  })
  // An idle connection that the server dropped (a restart) is discarded by
  // the pool; the next call that needs the server reports the outage.
  pool.on('error', () => {})
  try {
    await inTransaction(pool, migratePostgres)
  } catch (error) {
    await pool.end()
    throw error
  }
  return new PostgresStorage(pool, new PoolWaits(clock))
}

export class PostgresStorage implements Storage {
  readonly backend = 'postgres'
  readonly #pool: pg.Pool
  readonly #waits: PoolWaits
  readonly #pets = new KeptAnimals()
  /**
   * Only the pages isFinalPage proves: identities are taken outside the
   * transaction and committed in any order, so a page with a gap in its ids
   * may still gain the animal in it (docs/INTERNALS.md, "Kept pages").
   */
  readonly #pages = new KeptPages(isFinalPage)
  #pending: PendingInsert[] = []
  #flushScheduled = false
  #closed = false

  constructor (pool: pg.Pool, waits: PoolWaits) {
    this.#pool = pool
    this.#waits = waits
  }

  // PetStore
  createPet (pet: NewPetRecord): Promise<PetRecord> {
    if (this.#closed) return Promise.reject(new StorageUnavailableError('the database is closed'))
    return new Promise((resolve, reject) => {
      this.#pending.push({ pet, resolve, reject })
      if (!this.#flushScheduled) {
        this.#flushScheduled = true
        // #flush settles every insert itself, failures included.
        setImmediate(() => { this.#flush().catch(() => {}) })
      }
    })
  }

  /** Inserts every queued animal with one statement per MAX_GROUP of them. */
  async #flush (): Promise<void> {
    this.#flushScheduled = false
    const queued = this.#pending
    this.#pending = []
    for (let start = 0; start < queued.length; start += MAX_GROUP) {
      await this.#insertGroup(queued.slice(start, start + MAX_GROUP))
    }
  }

  async #insertGroup (group: PendingInsert[]): Promise<void> {
    let ids: bigint[]
    try {
      ids = await this.#insertRows(group.map(({ pet }) => pet))
    } catch (error) {
      const failure = classifyPostgresError(error)
      if (failure instanceof StorageUnavailableError || group.length === 1) {
        for (const insert of group) insert.reject(failure)
        return
      }
      // One row the database refused fails the statement: each goes alone,
      // so that only that one fails.
      await Promise.all(group.map(async (insert) => await this.#insertGroup([insert])))
      return
    }
    group.forEach((insert, i) => insert.resolve({ id: ids[i] as bigint, ...insert.pet }))
  }

  /** One multi-row INSERT; its ids, sorted, in the order of `pets` (PET_SQL.insertMany says why). */
  async #insertRows (pets: readonly NewPetRecord[]): Promise<bigint[]> {
    const { rows } = await this.#waits.enter(this.#pool, () => this.#pool.query<{ id: bigint }>(PET_SQL.insertMany,
      NEW_PET_COLUMNS.map(({ field, kind }) => pets.map((p) => kind === 'int' ? String(p[field as keyof NewPetRecord]) : p[field as keyof NewPetRecord]))))
    return rows.map((row) => row.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  }

  async createPetOnce (pet: NewPetRecord, idempotency: IdempotencyRecord): Promise<CreateOnceResult> {
    const { apiKeyId, key, requestHash, createdAt, liveAfter } = idempotency
    return await this.#transaction(async (client) => {
      // No row back: a live record holds the key, and its animal is the answer.
      const claimed = await client.query(PET_SQL.claimIdempotency, [apiKeyId, key, requestHash, createdAt, liveAfter])
      if (claimed.rowCount === 0) {
        const { rows } = await client.query<PetRecord & { requestHash: string }>(PET_SQL.findIdempotent, [apiKeyId, key])
        const earlier = rows[0]
        if (earlier === undefined) throw new Error(`idempotency key ${apiKeyId}/${key} is held but names no animal`)
        const { requestHash: earlierHash, ...earlierPet } = earlier
        return { created: false, requestHash: earlierHash, pet: earlierPet }
      }
      const { rows } = await client.query<{ id: bigint }>(PET_SQL.insert, newPetValues(pet))
      const id = (rows[0] as { id: bigint }).id
      await client.query(PET_SQL.setIdempotentPet, [apiKeyId, key, id])
      return { created: true, pet: { id, ...pet } }
    })
  }

  async getPet (id: bigint): Promise<PetRecord | undefined> {
    const rows = await this.#query<PetRecord>(PET_SQL.get, [id])
    return rows[0]
  }

  async getPetJson (id: bigint): Promise<Buffer | undefined> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    return await this.#pets.get(id, async () => (await this.#query<{ json: string }>(PET_SQL.getJson, [id]))[0]?.json)
  }

  async listPetsJson (query: PetPageQuery): Promise<PetPageJson> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    const { afterId, status, size } = query
    return await this.#pages.get(query, async () => {
      // One string to read, not a row per animal to parse and serialize again: the list's CPU
      // a request, 480–515 → 399–458 µs (docs/PERFORMANCE.md: "Where the scaled-out list's CPU goes").
      const rows = status === undefined
        ? await this.#query<PageRow>(PET_SQL.pageAll, [afterId, size + 1])
        : await this.#query<PageRow>(PET_SQL.pageByStatus, [status, afterId, size + 1])
      const { json, count } = rows[0] as PageRow
      return cutPage(json, Number(count), size)
    })
  }

  async listPets ({ afterId, status, limit }: ListPetsQuery): Promise<PetRecord[]> {
    return status === undefined
      ? await this.#query<PetRecord>(PET_SQL.listAll, [afterId, limit])
      : await this.#query<PetRecord>(PET_SQL.listByStatus, [status, afterId, limit])
  }

  async purgeIdempotentRequests (createdBefore: number): Promise<number> {
    const result = await this.#run(PET_SQL.purgeIdempotency, [createdBefore])
    return result.rowCount ?? 0
  }

  // KeyStore
  async createApiKey (key: NewApiKeyRecord, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord> {
    const values = [key.name, key.plan, key.perMinute, key.perDay, key.environment, scopesColumn(key.scopes), key.tokenHash, key.tokenHint,
      key.createdAt, key.expiresAt, key.concurrency]
    if (event === undefined) return toApiKey((await this.#query<ApiKeyRow>(KEY_SQL.create, values))[0] as ApiKeyRow)
    // The key, its token and its event, in one transaction.
    return await this.#transaction(async (client) => {
      const { rows } = await client.query<ApiKeyRow>(KEY_SQL.create, values)
      return await announced(client, toApiKey(rows[0] as ApiKeyRow), event)
    })
  }

  async findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyMatch | undefined> {
    const rows = await this.#query<ApiKeyRow & { previous: boolean }>(KEY_SQL.findByToken, [tokenHash])
    const row = rows[0]
    return row === undefined ? undefined : { key: toApiKey(row), previous: row.previous }
  }

  async findApiKeyByIssuedToken (tokenHash: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.#query<ApiKeyRow>(KEY_SQL.findIssued, [tokenHash])
    return rows[0] === undefined ? undefined : toApiKey(rows[0])
  }

  async getApiKey (id: number): Promise<ApiKeyRecord | undefined> {
    const rows = await this.#query<ApiKeyRow>(KEY_SQL.get, [id])
    return rows[0] === undefined ? undefined : toApiKey(rows[0])
  }

  async listApiKeys (afterId = 0, limit?: number): Promise<ApiKeyRecord[]> {
    return (await this.#query<ApiKeyRow>(KEY_SQL.list, [afterId, limit ?? null])).map(toApiKey)
  }

  async changeApiKey (id: number, change: (key: ApiKeyRecord) => ApiKeyChanges, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord | undefined> {
    return await this.#transaction(async (client) => {
      const { rows } = await client.query<ApiKeyRow>(KEY_SQL.getForUpdate, [id])
      const row = rows[0]
      if (row === undefined) return undefined
      const changes = change(toApiKey(row))
      const { set, values } = keyChangeSql(changes, (n) => `$${n}`)
      if (set === '') return toApiKey(row)
      const updated = await client.query<ApiKeyRow>(
        `UPDATE api_keys SET ${set} WHERE id = $${values.length + 1} RETURNING ${KEY_COLUMNS}`, [...values, id])
      if (changes.token !== undefined) await client.query(KEY_SQL.insertToken, [id, changes.token.hash])
      return await announced(client, toApiKey(updated.rows[0] as ApiKeyRow), event)
    })
  }

  async listTokenHashes (afterId: number, limit: number): Promise<IssuedToken[]> {
    const rows = await this.#query<{ id: bigint, token_hash: string }>(KEY_SQL.listTokens, [afterId, limit])
    return rows.map((row) => ({ id: Number(row.id), tokenHash: row.token_hash }))
  }

  async countTokens (): Promise<number> {
    const rows = await this.#query<{ n: bigint }>(KEY_SQL.countTokens)
    return Number(rows[0]?.n ?? 0n)
  }

  async searchApiKeys (search: KeySearch): Promise<ApiKeyRecord[]> {
    const { sql, values } = keySearchSql(search, (n) => `$${n}`)
    return (await this.#query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ${sql}`, values)).map(toApiKey)
  }

  async countApiKeys (now: number): Promise<KeyCount[]> {
    const rows = await this.#query<{ state: KeyCount['state'], plan: KeyCount['plan'], count: string }>(KEY_SQL.countByState, [now])
    return rows.map((row) => ({ state: row.state, plan: row.plan, count: Number(row.count) }))
  }

  // LeakStore
  async addKeyLeak (leak: KeyLeakRecord): Promise<boolean> {
    const result = await this.#run('INSERT INTO key_leaks (api_key_id, report, url, source, found_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
      [leak.keyId, leak.report, leak.url, leak.source, leak.foundAt])
    return result.rowCount === 1
  }

  async firstKeyLeaks (keyIds: readonly number[]): Promise<KeyLeakRecord[]> {
    if (keyIds.length === 0) return []
    // The earliest of each key's; ties (one instant) by report, so that every read picks the same.
    const rows = await this.#query<KeyLeakRow>(
      `SELECT DISTINCT ON (api_key_id) ${LEAK_COLUMNS} FROM key_leaks WHERE api_key_id = ANY($1::bigint[])
       ORDER BY api_key_id, found_at, report`, [keyIds])
    return rows.map(toKeyLeak)
  }

  async countLeakedKeys (): Promise<number> {
    const rows = await this.#query<{ n: bigint }>('SELECT count(DISTINCT api_key_id) AS n FROM key_leaks')
    return Number(rows[0]?.n ?? 0n)
  }

  // UsageStore
  async addUsage (usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>, deprecatedCalls: readonly DeprecatedCalls[] = []): Promise<void> {
    if (usage.length === 0 && lastUsed.size === 0 && deprecatedCalls.length === 0) return
    await this.#transaction(async (client) => {
      await client.query(USAGE_SQL.add,
        [usage.map((u) => u.keyId), usage.map((u) => u.day), usage.map((u) => u.admitted), usage.map((u) => u.refused)])
      await client.query(USAGE_SQL.touch, [[...lastUsed.keys()], [...lastUsed.values()]])
      if (deprecatedCalls.length > 0) {
        await client.query(USAGE_SQL.addCalls, [deprecatedCalls.map((c) => c.keyId), deprecatedCalls.map((c) => c.operation),
          deprecatedCalls.map((c) => c.day), deprecatedCalls.map((c) => c.calls), deprecatedCalls.map((c) => c.lastCall)])
      }
    })
  }

  async deprecatedCallers (fromDay: number, toDay: number): Promise<DeprecatedCaller[]> {
    const rows = await this.#query<ApiKeyRow & { operation: string, calls: string | bigint, last_call: string | bigint }>(USAGE_SQL.callers, [fromDay, toDay])
    return rows.map((row) => ({ operation: row.operation, key: toApiKey(row), calls: Number(row.calls), lastCall: Number(row.last_call) }))
  }

  async usageOf (keyId: number, fromDay: number, toDay: number): Promise<KeyUsage[]> {
    const rows = await this.#query<{ day: number, admitted: bigint, refused: bigint }>(USAGE_SQL.of, [keyId, fromDay, toDay])
    return rows.map((row) => ({ keyId, day: Number(row.day), admitted: Number(row.admitted), refused: Number(row.refused) }))
  }

  async usageTotals (fromDay: number, toDay: number): Promise<DayTotals[]> {
    const rows = await this.#query<{ day: number, admitted: string, refused: string }>(USAGE_SQL.totals, [fromDay, toDay])
    return rows.map((row) => ({ day: Number(row.day), admitted: Number(row.admitted), refused: Number(row.refused) }))
  }

  async busiestKeys (day: number, limit: number): Promise<KeyDayUsage[]> {
    const rows = await this.#query<ApiKeyRow & { admitted: bigint, refused: bigint }>(USAGE_SQL.busiest, [day, limit])
    return rows.map((row) => ({ key: toApiKey(row), admitted: Number(row.admitted), refused: Number(row.refused) }))
  }

  // WebhookStore
  async createWebhook (webhook: NewWebhookRecord): Promise<WebhookRecord> {
    const rows = await this.#query<WebhookRow>(WEBHOOK_SQL.create, [webhook.url, eventsColumn(webhook.events), webhook.description,
      webhook.enabled ? 1 : 0, webhook.secret, webhook.createdAt, webhook.updatedAt])
    return toWebhook(rows[0] as WebhookRow)
  }

  async getWebhook (id: number): Promise<WebhookRecord | undefined> {
    const rows = await this.#query<WebhookRow>(WEBHOOK_SQL.get, [id])
    return rows[0] === undefined ? undefined : toWebhook(rows[0])
  }

  async listWebhooks (afterId: number, limit: number): Promise<WebhookRecord[]> {
    return (await this.#query<WebhookRow>(WEBHOOK_SQL.list, [afterId, limit])).map(toWebhook)
  }

  async changeWebhook (id: number, changes: WebhookChanges): Promise<WebhookRecord | undefined> {
    const { set, values } = webhookChangeSql(changes, (n) => `$${n}`)
    const rows = await this.#query<WebhookRow>(
      `UPDATE webhook_endpoints SET ${set} WHERE id = $${values.length + 1} RETURNING ${WEBHOOK_COLUMNS}`, [...values, id])
    return rows[0] === undefined ? undefined : toWebhook(rows[0])
  }

  async rollWebhookSecret (id: number, secret: Buffer, previousExpiresAt: number | null, now: number): Promise<WebhookRecord | undefined> {
    const rows = await this.#query<WebhookRow>(ROLL_SECRET_SQL, [previousExpiresAt, previousExpiresAt, secret, now, id])
    return rows[0] === undefined ? undefined : toWebhook(rows[0])
  }

  async deleteWebhook (id: number): Promise<WebhookRecord | undefined> {
    const rows = await this.#query<WebhookRow>(WEBHOOK_SQL.remove, [id])
    return rows[0] === undefined ? undefined : toWebhook(rows[0])
  }

  async fanOutEvents (limit: number, now: number): Promise<number> {
    return await this.#transaction(async (client) => {
      const { rows } = await client.query<{ id: bigint }>(WEBHOOK_SQL.fanOut, [limit, now])
      if (rows.length > 0) await client.query(WEBHOOK_SQL.forgetUnwanted, [rows.map((row) => row.id)])
      return rows.length
    })
  }

  async claimDeliveries ({ now, leaseUntil, limit, skipEndpoints }: ClaimQuery): Promise<DueDelivery[]> {
    return (await this.#query<DueDeliveryRow>(WEBHOOK_SQL.claim, [now, leaseUntil, limit, skipEndpoints])).map(toDueDelivery)
  }

  async recordDeliveries (outcomes: readonly DeliveryOutcome[]): Promise<void> {
    if (outcomes.length === 0) return
    const streaks = failingStreaks(outcomes)
    await this.#transaction(async (client) => {
      await client.query(WEBHOOK_SQL.record, [outcomes.map((o) => o.state), outcomes.map((o) => o.nextAttemptAt), outcomes.map((o) => o.lastStatus),
        outcomes.map((o) => o.lastError), outcomes.map((o) => o.eventId), outcomes.map((o) => o.endpointId)])
      await client.query(WEBHOOK_SQL.streaks, [streaks.map((s) => s.endpointId), streaks.map((s) => s.succeeded), streaks.map((s) => s.failedAt)])
    })
  }

  async disableFailingEndpoints (failingSince: number, reason: (endpoint: WebhookRecord) => string, now: number): Promise<WebhookRecord[]> {
    const candidates = await this.#query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE enabled = 1 AND failing_since <= $1`, [failingSince])
    if (candidates.length === 0) return []
    return await this.#transaction(async (client) => {
      const disabled: WebhookRecord[] = []
      for (const candidate of candidates) {
        // Judged again under the row's lock: an operator may have enabled it again, or a success ended its streak, in between.
        const { rows } = await client.query<WebhookRow>(
          `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1, disabled_at = $2 WHERE id = $3 AND enabled = 1 AND failing_since <= $4 RETURNING ${WEBHOOK_COLUMNS}`,
          [reason(toWebhook(candidate)), now, candidate.id, failingSince])
        if (rows[0] !== undefined) disabled.push(toWebhook(rows[0]))
      }
      return disabled
    })
  }

  async listDeliveries (endpointId: number, beforeEventId: bigint | null, limit: number): Promise<DeliveryRecord[]> {
    return (await this.#query<DeliveryRow>(DELIVERIES_SQL, [endpointId, beforeEventId ?? 9_223_372_036_854_775_807n, limit])).map(toDelivery)
  }

  async purgeEvents (createdBefore: number): Promise<number> {
    return (await this.#run(WEBHOOK_SQL.purge, [createdBefore])).rowCount ?? 0
  }

  async announceOnce (once: KeyAnnouncement, event: NewEvent): Promise<boolean> {
    const result = await this.#run(WEBHOOK_SQL.announceOnce, [once.keyId, once.type, once.at, event.type, event.createdAt, event.data])
    return result.rowCount === 1
  }

  async keysToAnnounce (type: EventType, after: number, until: number, limit: number): Promise<ApiKeyRecord[]> {
    return (await this.#query<ApiKeyRow>(WEBHOOK_SQL.keysToAnnounce, [after, until, type, limit])).map(toApiKey)
  }

  async resendDelivery (endpointId: number, eventId: bigint, now: number): Promise<boolean> {
    return (await this.#run(WEBHOOK_SQL.resend, [now, eventId, endpointId])).rowCount === 1
  }

  async addEndpointEvent (endpointId: number, event: { type: string, createdAt: number, data: string }): Promise<bigint | undefined> {
    const { rows } = await this.#run<{ event_id: string | bigint }>(WEBHOOK_SQL.addEndpointEvent, [endpointId, event.type, event.createdAt, event.data])
    return rows[0] === undefined ? undefined : BigInt(rows[0].event_id)
  }

  async oldestUndeliveredEvent (): Promise<number | undefined> {
    const { rows } = await this.#run<{ created_at: string | null }>(WEBHOOK_SQL.oldestUndelivered)
    const at = rows[0]?.created_at
    return at === null || at === undefined ? undefined : Number(at)
  }

  // StoreConnection
  poolUse (): PoolUse {
    return {
      open: this.#pool.totalCount,
      idle: this.#pool.idleCount,
      waiting: this.#pool.waitingCount,
      max: this.#pool.options.max,
      longestWaitMs: this.#waits.longest(this.#pool)
    }
  }

  async secret (name: string): Promise<Buffer> {
    const read = async (): Promise<Buffer | undefined> =>
      (await this.#query<{ value: Buffer }>('SELECT value FROM secrets WHERE name = $1', [name]))[0]?.value
    const existing = await read()
    if (existing !== undefined) return existing
    // The first instance to get here makes it; any other keeps the winner's.
    await this.#run('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, randomBytes(32)])
    return await read() as Buffer
  }

  async ping (): Promise<void> {
    await this.#run('SELECT 1')
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#flush()
    await this.#pool.end()
  }

  async #query<Row extends pg.QueryResultRow> (sql: string, values: unknown[] = []): Promise<Row[]> {
    return (await this.#run<Row>(sql, values)).rows
  }

  async #run<Row extends pg.QueryResultRow = pg.QueryResultRow> (sql: string, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    try {
      return await this.#waits.enter(this.#pool, () => this.#pool.query<Row>(sql, values))
    } catch (error) {
      throw classifyPostgresError(error)
    }
  }

  async #transaction<T> (work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    return await inTransaction(this.#pool, work, this.#waits)
  }
}

/** Writes what a change to this record announces, if anything, in the change's transaction; gives the record back. */
async function announced<T> (client: pg.PoolClient, record: T, event: EventOf<T> | undefined): Promise<T> {
  for (const made of eventsOf(event, record)) await client.query(EVENT_SQL.insert, [made.type, made.createdAt, made.data])
  return record
}

/** `waits`: where a wait for the connection is noted; none while the storage is being opened. */
async function inTransaction<T> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, waits?: PoolWaits): Promise<T> {
  let client: pg.PoolClient
  try {
    client = await (waits === undefined ? pool.connect() : waits.enter(pool, () => pool.connect()))
  } catch (error) {
    throw classifyPostgresError(error)
  }
  // A connection lost between this transaction's queries emits 'error' on
  // the client, which the pool listens for only while the client is idle:
  // unheard, it would end the process. The next query fails instead.
  client.on('error', ignoreLostConnection)
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    client.off('error', ignoreLostConnection)
    client.release()
    return result
  } catch (error) {
    // Destroyed, not returned: its transaction ends with the connection.
    client.off('error', ignoreLostConnection)
    client.release(true)
    throw classifyPostgresError(error)
  }
}

function ignoreLostConnection (): void {}
