// The embedded backend: one SQLite file, WAL mode, every commit fsynced, new
// animals through a group commit (group-commit.ts). Writes that meet another
// process's lock retry for up to 5 s, then fail as unavailable (503); other
// errors are ours (500) (docs/INTERNALS.md, section "SQLite").
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { setTimeout as delay } from 'node:timers/promises'
import { dirname } from 'node:path'
import { StorageUnavailableError } from '../../errors.js'
import type {
  ApiKeyChanges, ApiKeyMatch, ApiKeyRecord, CreateOnceResult, IdempotencyRecord, ListPetsQuery, NewApiKeyRecord, NewPetRecord,
  IssuedToken, KeyUsage, PetPageJson, PetPageQuery, PetRecord, Storage,
  ClaimQuery, DeliveryOutcome, DeliveryRecord, DueDelivery, EventOf, KeyAnnouncement, NewEvent, NewWebhookRecord, WebhookChanges, WebhookRecord
} from '../storage.js'
import type { EventType } from '../../domain.js'
import type { DayTotals, DeprecatedCaller, DeprecatedCalls, KeyCount, KeyDayUsage, KeyLeakRecord, KeySearch } from '../storage.js'
import { keySearchSql, stateSql } from '../key-search.js'
import { KEY_COLUMNS, LEAK_COLUMNS, toApiKey, toDelivery, toKeyLeak, toWebhook, type ApiKeyRow, type KeyLeakRow, type WebhookRow } from '../rows.js'
import { Database, createOwnerOnly } from './driver.js'
import { classifySqliteError, isBusy } from './errors.js'
import { BUSY_RETRY_MS, GroupCommit } from './group-commit.js'
import { petInserts } from './pet-inserts.js'
import { migrateSqlite } from './schema.js'
import { KeptAnimals, KeptPages, cutPage } from '../pet-json.js'
import {
  keyStatements, petStatements, sqliteValue, usageStatements, webhookStatements, webhookValues,
  type KeyStatements, type PageTuple, type PetStatements, type UsageStatements, type WebhookStatements
} from './statements.js'
import type { WriteTurn } from './write-turns.js'

/** Above every id. */
const INT64_MAX = 9_223_372_036_854_775_807n

/** How long a write waits for another connection's write lock before the client gets 503. */
const BUSY_BUDGET_MS = 5000

/** Accepts `sqlite:PATH` and `sqlite::memory:`. */
export function sqlitePath (url: string): string {
  return url.replace(/^sqlite:/, '')
}

export interface SqliteOptions {
  /** How long a write may wait for another connection's lock; tests shorten it. */
  busyBudgetMs?: number
  /** Shared with the other workers of this process: their group commits take turns (write-turns.ts). */
  writeTurn?: WriteTurn
}

export function openSqlite (url: string, { busyBudgetMs = BUSY_BUDGET_MS, writeTurn }: SqliteOptions = {}): SqliteStorage {
  const path = sqlitePath(url)
  if (path !== ':memory:') {
    // The file holds the key hashes and the cursor secret: no other local
    // user may read it. A folder and a file made here are the owner's alone;
    // SQLite gives the -wal and -shm files the database file's mode
    // (findCreateFileMode in https://sqlite.org/src/file?name=src/os_unix.c),
    // and an empty file is an empty database. Existing ones keep the mode an
    // operator gave them.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    createOwnerOnly(path)
  }
  // Opening and migrating may wait for another instance doing the same.
  const db = new Database(path, { timeout: busyBudgetMs })
  // Every connection: the settings are per connection, and better-sqlite3
  // does not keep them across a reopen. https://www.sqlite.org/pragma.html#pragma_synchronous
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.defaultSafeIntegers(true)
  migrateSqlite(db)
  // From here on a write never sleeps on the event loop for a lock held by
  // another connection: it fails at once and is retried asynchronously.
  // Reads never wait in WAL mode.
  db.pragma('busy_timeout = 0')
  return new SqliteStorage(db, busyBudgetMs, writeTurn)
}

export class SqliteStorage implements Storage {
  readonly backend = 'sqlite'
  readonly #db: Database
  readonly #busyBudgetMs: number

  /**
   * Every full page: on SQLite an animal committed later always has a higher
   * id than every one visible before it, so a page read with one animal after
   * it never changes (docs/INTERNALS.md, "Kept pages").
   */
  readonly #pages = new KeptPages((_query, page) => page.nextAfterId !== undefined)
  readonly #pets = new KeptAnimals()
  readonly #group: GroupCommit
  #closed = false
  /** Set while writes fail for want of the database; /readyz reports it. */
  #writeFailure: Error | undefined

  readonly #petSql: PetStatements
  readonly #keySql: KeyStatements
  readonly #usageSql: UsageStatements
  readonly #webhookSql: WebhookStatements

  constructor (db: Database, busyBudgetMs: number, writeTurn?: WriteTurn) {
    this.#db = db
    this.#busyBudgetMs = busyBudgetMs
    this.#petSql = petStatements(db)
    this.#keySql = keyStatements(db)
    this.#usageSql = usageStatements(db)
    this.#webhookSql = webhookStatements(db)
    this.#group = new GroupCommit({
      ...petInserts(db),
      busyBudgetMs,
      turn: writeTurn,
      written: (failure) => { this.#writeFailure = failure }
    })
  }

  // PetStore
  async createPet (pet: NewPetRecord): Promise<PetRecord> {
    const result = await this.#group.add(pet, undefined)
    return result.pet
  }

  createPetOnce (pet: NewPetRecord, idempotency: IdempotencyRecord): Promise<CreateOnceResult> {
    return this.#group.add(pet, idempotency)
  }

  async getPet (id: bigint): Promise<PetRecord | undefined> {
    return this.#read(() => this.#petSql.get.get(id))
  }

  async listPets ({ afterId, status, limit }: ListPetsQuery): Promise<PetRecord[]> {
    return this.#read(() => status === undefined
      ? this.#petSql.listAll.for(limit).all(afterId)
      : this.#petSql.listByStatus.for(limit).all(status, afterId))
  }

  async getPetJson (id: bigint): Promise<Buffer | undefined> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    return await this.#pets.get(id, () => this.#read(() => this.#petSql.getJson.get(id)))
  }

  async listPetsJson (query: PetPageQuery): Promise<PetPageJson> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    const { afterId, status, size } = query
    // SQLite's JSON rather than rows and the serializer: for the list rows of `npm run bench`,
    // a page of 20, 23.4 → 15.9 µs (docs/PERFORMANCE.md: What each change bought).
    return await this.#pages.get(query, () => {
      const [json, count] = this.#read(() => (status === undefined
        ? this.#petSql.pageAll.for(size + 1).get(afterId)
        : this.#petSql.pageByStatus.for(size + 1).get(status, afterId)) as PageTuple)
      return cutPage(json, Number(count), size)
    })
  }

  async purgeIdempotentRequests (createdBefore: number): Promise<number> {
    return this.#write(() => this.#petSql.purgeIdempotency.run(BigInt(createdBefore)).changes)
  }

  // KeyStore
  async createApiKey (key: NewApiKeyRecord, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord> {
    return this.#write(() => this.#keySql.create.immediate(key, event))
  }

  async findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyMatch | undefined> {
    const row = this.#read(() => this.#keySql.find.get(tokenHash, tokenHash))
    return row === undefined ? undefined : { key: toApiKey(row), previous: row.previous === 1n }
  }

  async findApiKeyByIssuedToken (tokenHash: string): Promise<ApiKeyRecord | undefined> {
    const row = this.#read(() => this.#keySql.findIssued.get(tokenHash))
    return row === undefined ? undefined : toApiKey(row)
  }

  async getApiKey (id: number): Promise<ApiKeyRecord | undefined> {
    const row = this.#read(() => this.#keySql.get.get(BigInt(id)))
    return row === undefined ? undefined : toApiKey(row)
  }

  async listApiKeys (afterId = 0, limit?: number): Promise<ApiKeyRecord[]> {
    return this.#read(() => this.#keySql.list.all(BigInt(afterId), limit ?? -1)).map(toApiKey)
  }

  async changeApiKey (id: number, change: (key: ApiKeyRecord) => ApiKeyChanges, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord | undefined> {
    return this.#write(() => this.#keySql.change.immediate(BigInt(id), change, event))
  }

  async listTokenHashes (afterId: number, limit: number): Promise<IssuedToken[]> {
    const rows = this.#read(() => this.#keySql.listTokens.all(BigInt(afterId), limit))
    return rows.map(([id, tokenHash]) => ({ id: Number(id), tokenHash }))
  }

  async countTokens (): Promise<number> {
    const row = this.#read(() => this.#keySql.countTokens.get())
    return Number(row?.n ?? 0n)
  }

  async searchApiKeys (search: KeySearch): Promise<ApiKeyRecord[]> {
    const { sql, values } = keySearchSql(search, () => '?')
    // Filters vary with each search, and searches are an operator's: prepared each time.
    return this.#read(() => this.#db.prepare<unknown[], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ${sql}`).all(...values.map(sqliteValue))).map(toApiKey)
  }

  async countApiKeys (now: number): Promise<KeyCount[]> {
    const rows = this.#read(() => this.#db.prepare<[bigint], [KeyCount['state'], KeyCount['plan'], bigint]>(
      `SELECT ${stateSql('?')} AS state, plan, count(*) FROM api_keys GROUP BY 1, 2 ORDER BY 1, 2`).raw(true).all(BigInt(now)))
    return rows.map(([state, plan, count]) => ({ state, plan, count: Number(count) }))
  }

  // LeakStore
  async addKeyLeak (leak: KeyLeakRecord): Promise<boolean> {
    const insert = this.#db.prepare<[bigint, string, string | null, string | null, bigint]>(
      'INSERT INTO key_leaks (api_key_id, report, url, source, found_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
    const { changes } = await this.#write(() => insert.run(BigInt(leak.keyId), leak.report, leak.url, leak.source, BigInt(leak.foundAt)))
    return changes === 1
  }

  async firstKeyLeaks (keyIds: readonly number[]): Promise<KeyLeakRecord[]> {
    if (keyIds.length === 0) return []
    // The earliest of each key's; ties (one instant) by report, so that every read picks the same.
    const rows = this.#read(() => this.#db.prepare<[string], KeyLeakRow>(
      `SELECT ${LEAK_COLUMNS} FROM (
         SELECT ${LEAK_COLUMNS}, row_number() OVER (PARTITION BY api_key_id ORDER BY found_at, report) AS n
         FROM key_leaks WHERE api_key_id IN (SELECT value FROM json_each(?))
       ) WHERE n = 1 ORDER BY api_key_id`).all(JSON.stringify(keyIds)))
    return rows.map(toKeyLeak)
  }

  async countLeakedKeys (): Promise<number> {
    return Number(this.#read(() => this.#db.prepare<[], bigint>('SELECT count(DISTINCT api_key_id) FROM key_leaks').pluck().get()) ?? 0n)
  }

  // UsageStore
  async addUsage (usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>, deprecatedCalls: readonly DeprecatedCalls[] = []): Promise<void> {
    await this.#write(() => { this.#usageSql.add.immediate(usage, lastUsed, deprecatedCalls) })
  }

  async deprecatedCallers (fromDay: number, toDay: number): Promise<DeprecatedCaller[]> {
    const rows = this.#read(() => this.#db.prepare<[bigint, bigint], ApiKeyRow & { operation: string, calls: bigint, last_call: bigint }>(
      `SELECT c.operation, ${KEY_COLUMNS.split(', ').map((column) => `k.${column}`).join(', ')}, c.calls, c.last_call
       FROM (SELECT operation, api_key_id, sum(calls) AS calls, max(last_call) AS last_call
             FROM deprecated_calls WHERE day BETWEEN ? AND ? GROUP BY operation, api_key_id) c
       JOIN api_keys k ON k.id = c.api_key_id
       ORDER BY c.operation, c.calls DESC, k.id`).all(BigInt(fromDay), BigInt(toDay)))
    return rows.map((row) => ({ operation: row.operation, key: toApiKey(row), calls: Number(row.calls), lastCall: Number(row.last_call) }))
  }

  async usageOf (keyId: number, fromDay: number, toDay: number): Promise<KeyUsage[]> {
    const rows = this.#read(() => this.#usageSql.of.all(BigInt(keyId), BigInt(fromDay), BigInt(toDay)))
    return rows.map(([id, day, admitted, refused]) => ({ keyId: Number(id), day: Number(day), admitted: Number(admitted), refused: Number(refused) }))
  }

  async usageTotals (fromDay: number, toDay: number): Promise<DayTotals[]> {
    const rows = this.#read(() => this.#db.prepare<[bigint, bigint], [bigint, bigint, bigint]>(
      'SELECT day, sum(admitted), sum(refused) FROM key_usage WHERE day BETWEEN ? AND ? GROUP BY day ORDER BY day').raw(true)
      .all(BigInt(fromDay), BigInt(toDay)))
    return rows.map(([day, admitted, refused]) => ({ day: Number(day), admitted: Number(admitted), refused: Number(refused) }))
  }

  async busiestKeys (day: number, limit: number): Promise<KeyDayUsage[]> {
    const rows = this.#read(() => this.#db.prepare<[bigint, bigint], ApiKeyRow & { admitted: bigint, refused: bigint }>(
      `SELECT ${KEY_COLUMNS.split(', ').map((column) => `k.${column}`).join(', ')}, u.admitted, u.refused
       FROM key_usage u JOIN api_keys k ON k.id = u.api_key_id
       WHERE u.day = ? ORDER BY u.admitted + u.refused DESC, k.id LIMIT ?`).all(BigInt(day), BigInt(limit)))
    return rows.map((row) => ({ key: toApiKey(row), admitted: Number(row.admitted), refused: Number(row.refused) }))
  }

  // WebhookStore
  async createWebhook (webhook: NewWebhookRecord): Promise<WebhookRecord> {
    return toWebhook(await this.#write(() => this.#webhookSql.create.get(...webhookValues(webhook)) as WebhookRow))
  }

  async getWebhook (id: number): Promise<WebhookRecord | undefined> {
    const row = this.#read(() => this.#webhookSql.get.get(BigInt(id)))
    return row === undefined ? undefined : toWebhook(row)
  }

  async listWebhooks (afterId: number, limit: number): Promise<WebhookRecord[]> {
    return this.#read(() => this.#webhookSql.list.all(BigInt(afterId), BigInt(limit))).map(toWebhook)
  }

  async changeWebhook (id: number, changes: WebhookChanges): Promise<WebhookRecord | undefined> {
    return await this.#write(() => this.#webhookSql.change.immediate(BigInt(id), changes))
  }

  async rollWebhookSecret (id: number, secret: Buffer, previousExpiresAt: number | null, now: number): Promise<WebhookRecord | undefined> {
    const until = previousExpiresAt === null ? null : BigInt(previousExpiresAt)
    const row = await this.#write(() => this.#webhookSql.rollSecret.get(until, until, secret, BigInt(now), BigInt(id)))
    return row === undefined ? undefined : toWebhook(row)
  }

  async deleteWebhook (id: number): Promise<WebhookRecord | undefined> {
    const row = await this.#write(() => this.#webhookSql.remove.get(BigInt(id)))
    return row === undefined ? undefined : toWebhook(row)
  }

  async fanOutEvents (limit: number, now: number): Promise<number> {
    if (this.#read(() => this.#webhookSql.anyToFanOut.get()) === undefined) return 0
    return await this.#write(() => this.#unsynced(() => this.#webhookSql.fanOut.immediate(limit, now)))
  }

  async claimDeliveries (query: ClaimQuery): Promise<DueDelivery[]> {
    if (this.#read(() => this.#webhookSql.anyDue.get(BigInt(query.now))) === undefined) return []
    return await this.#write(() => this.#unsynced(() => this.#webhookSql.claim.immediate(query)))
  }

  async recordDeliveries (outcomes: readonly DeliveryOutcome[]): Promise<void> {
    if (outcomes.length === 0) return
    await this.#write(() => { this.#unsynced(() => this.#webhookSql.record.immediate(outcomes)) })
  }

  async disableFailingEndpoints (failingSince: number, reason: (endpoint: WebhookRecord) => string, now: number): Promise<WebhookRecord[]> {
    if (this.#read(() => this.#webhookSql.anyFailing.get(BigInt(failingSince))) === undefined) return []
    return await this.#write(() => this.#webhookSql.disableFailing.immediate(BigInt(failingSince), reason, BigInt(now)))
  }

  async listDeliveries (endpointId: number, beforeEventId: bigint | null, limit: number): Promise<DeliveryRecord[]> {
    const rows = this.#read(() => this.#webhookSql.deliveries.all(BigInt(endpointId), beforeEventId ?? INT64_MAX, BigInt(limit)))
    return rows.map(toDelivery)
  }

  async purgeEvents (createdBefore: number): Promise<number> {
    return await this.#write(() => this.#webhookSql.purge.run(BigInt(createdBefore)).changes)
  }

  async announceOnce (once: KeyAnnouncement, event: NewEvent): Promise<boolean> {
    return await this.#write(() => this.#webhookSql.announceOnce.immediate(once, event))
  }

  async keysToAnnounce (type: EventType, after: number, until: number, limit: number): Promise<ApiKeyRecord[]> {
    return this.#read(() => this.#webhookSql.keysToAnnounce.all(BigInt(after), BigInt(until), type, BigInt(limit))).map(toApiKey)
  }

  async resendDelivery (endpointId: number, eventId: bigint, now: number): Promise<boolean> {
    return await this.#write(() => this.#webhookSql.resend.run(BigInt(now), eventId, BigInt(endpointId)).changes === 1)
  }

  async addEndpointEvent (endpointId: number, event: { type: string, createdAt: number, data: string }): Promise<bigint | undefined> {
    return await this.#write(() => this.#webhookSql.addEndpointEvent.immediate(BigInt(endpointId), event.type, BigInt(event.createdAt), event.data))
  }

  async oldestUndeliveredEvent (): Promise<number | undefined> {
    const at = this.#read(() => this.#webhookSql.oldestUndelivered.get())
    return at === null || at === undefined ? undefined : Number(at)
  }

  // StoreConnection
  poolUse (): undefined {
    return undefined
  }

  async secret (name: string): Promise<Buffer> {
    const select = this.#db.prepare<[string], { value: Buffer }>('SELECT value FROM secrets WHERE name = ?')
    const existing = this.#read(() => select.get(name))
    if (existing !== undefined) return existing.value
    // The first instance to get here makes it; any other keeps the winner's.
    await this.#write(() => this.#db.prepare('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING')
      .run(name, randomBytes(32)))
    return (this.#read(() => select.get(name)) as { value: Buffer }).value
  }

  async ping (): Promise<void> {
    this.#read(() => this.#db.prepare('SELECT 1').get())
    // After writes failed, ready again only once the write lock can be had.
    if (this.#writeFailure !== undefined) {
      await this.#write(() => {
        this.#db.exec('BEGIN IMMEDIATE')
        this.#db.exec('ROLLBACK')
      })
    }
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#group.close()
    this.#db.close()
  }

  #read<T> (work: () => T): T {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    try {
      return work()
    } catch (error) {
      throw classifySqliteError(error)
    }
  }

  /**
   * The dispatcher's own bookkeeping (fanning out, leases, outcomes),
   * committed without an fsync: in WAL mode a commit at synchronous=NORMAL
   * is as consistent as one at FULL, and is made durable by the next FULL
   * commit (a create's) or checkpoint. Lost only when the machine itself
   * stops, which can only mean a delivery sent again, as delivery at least
   * once allows; three fsyncs a turn made the dispatcher's work cost more
   * than the creates it announced (docs/PERFORMANCE.md, Webhooks).
   * https://www.sqlite.org/pragma.html#pragma_synchronous
   */
  #unsynced<T> (work: () => T): T {
    this.#db.pragma('synchronous = NORMAL')
    try {
      return work()
    } finally {
      this.#db.pragma('synchronous = FULL')
    }
  }

  /** A write outside the group commit, retried while another connection holds the write lock. */
  async #write<T> (work: () => T): Promise<T> {
    const deadline = Date.now() + this.#busyBudgetMs
    for (;;) {
      if (this.#closed) throw new StorageUnavailableError('the database is closed')
      try {
        const result = work()
        this.#writeFailure = undefined
        return result
      } catch (error) {
        if (!isBusy(error) || Date.now() >= deadline) {
          const failure = classifySqliteError(error)
          if (failure instanceof StorageUnavailableError) this.#writeFailure = failure
          throw failure
        }
      }
      await delay(BUSY_RETRY_MS)
    }
  }
}
