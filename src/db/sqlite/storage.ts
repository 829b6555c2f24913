// The embedded backend: one SQLite file, WAL mode, every commit fsynced, new
// animals through a group commit (group-commit.ts). Writes that meet another
// process's lock retry for up to 5 s, then fail as unavailable (503); other
// errors are ours (500) (docs/INTERNALS.md, section "SQLite").
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { setTimeout as delay } from 'node:timers/promises'
import { dirname } from 'node:path'
import { LRUCache } from 'lru-cache'
import { Database } from './driver.js'
import { StorageUnavailableError } from '../../errors.js'
import type { PetStatus } from '../../domain.js'
import { migrateSqlite } from './schema.js'
import type {
  ApiKeyChanges, ApiKeyMatch, ApiKeyRecord, CreateOnceResult, IdempotencyRecord, ListPetsQuery, NewApiKeyRecord, NewPetRecord,
  IssuedToken, KeyUsage, PetPageJson, PetPageQuery, PetRecord, Storage
} from '../storage.js'
import type { DayTotals, KeyCount, KeyDayUsage, KeySearch } from '../storage.js'
import { keySearchSql, stateSql } from '../key-search.js'
import { BUSY_RETRY_MS, GroupCommit, GroupRolledBack, type InsertOutcome, type PendingInsert } from './group-commit.js'
import { classifySqliteError, isBusy, isUnavailable } from './errors.js'
import { StatementPerLimit } from './statement-per-limit.js'
import type { WriteTurn } from './write-turns.js'
import { KEY_COLUMNS, keyChangeSql, scopesColumn, toApiKey, toPet, type ApiKeyRow, type PetRow } from '../rows.js'

type PetTuple = [id: bigint, name: string, categoryId: bigint, status: PetStatus]
/** A page written by SQLite: its JSON array and how many animals it holds. */
type PageTuple = [json: string, count: bigint]

/**
 * A page's JSON, written by SQLite as the response schema's serializer would:
 * its keys in order, int64 exact, strings escaped as JSON.stringify does
 * (https://www.sqlite.org/json1.html#jobj); rows ordered inside the aggregate, where SQLite keeps the order.
 */
const PET_JSON = "json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status)"
const PAGE_JSON = `json_group_array(${PET_JSON} ORDER BY id)`
/** Where each animal starts in a page's JSON: a string value cannot hold it, since its quotes are escaped there. */
const ANIMAL_START = '{"id":'
/** The bytes of full pages kept (about 3,000 pages of 20): the least recently read go first. */
const KEPT_PAGE_BYTES = 4 * 1024 * 1024
/** The bytes of animals kept (some 50,000 of them), likewise. */
const KEPT_PET_BYTES = 4 * 1024 * 1024

/** How long a write waits for another connection's write lock before the client gets 503. */
const BUSY_BUDGET_MS = 5000
/** The most animals one INSERT statement of a group commit adds; a larger group takes several. */
const INSERT_ROWS = 64

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
    closeSync(openSync(path, 'a', 0o600))
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
   * Full pages, as sent: on SQLite an animal committed later always has a
   * higher id than every one visible before it, so a page read with one animal
   * after it never changes (not so on PostgreSQL: docs/INTERNALS.md, section "SQLite").
   */
  readonly #fullPages = new LRUCache<string, PetPageJson>({ maxSize: KEPT_PAGE_BYTES, sizeCalculation: (page) => page.json.length })
  /** Animals found, as sent: once visible, an animal never changes. One not found is asked again, since it may be added. */
  readonly #pets = new LRUCache<bigint, Buffer>({ maxSize: KEPT_PET_BYTES, sizeCalculation: (json) => json.length })
  readonly #group: GroupCommit
  #closed = false
  /** Set while writes fail for want of the database; /readyz reports it. */
  #writeFailure: Error | undefined

  readonly #insertPet
  readonly #insertIdempotency
  readonly #findIdempotency
  readonly #getPet
  readonly #getPetJson
  readonly #listAll
  readonly #listByStatus
  readonly #pageAll
  readonly #pageByStatus
  readonly #purgeIdempotency
  readonly #insertKey
  readonly #findKey
  readonly #getKey
  readonly #findIssued
  readonly #listKeys
  readonly #insertToken
  readonly #listTokens
  readonly #countTokens
  readonly #changeKey
  readonly #createKey
  readonly #addUsage
  readonly #usageOf
  readonly #insertRows

  constructor (db: Database, busyBudgetMs: number, writeTurn?: WriteTurn) {
    this.#db = db
    this.#busyBudgetMs = busyBudgetMs
    this.#insertPet = db.prepare<[string, bigint, string]>(
      'INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id')
    // Only an expired record can be in the way here: a live one was found first, in the same transaction.
    this.#insertIdempotency = db.prepare<[bigint, string, string, bigint, bigint]>(
      `INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash,
         pet_id = excluded.pet_id, created_at = excluded.created_at`)
    this.#findIdempotency = db.prepare<[bigint, string, bigint], PetRow & { request_hash: string }>(
      `SELECT p.id, p.name, p.category_id, p.status, i.request_hash
       FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id
       WHERE i.api_key_id = ? AND i.key = ? AND i.created_at > ?`)
    this.#getPet = db.prepare<[bigint], PetRow>('SELECT id, name, category_id, status FROM pets WHERE id = ?')
    this.#getPetJson = db.prepare<[bigint], string>(`SELECT ${PET_JSON} FROM pets WHERE id = ?`).pluck(true)
    // Pages are read as arrays, not objects: a third cheaper per row.
    this.#listAll = new StatementPerLimit((limit) => db.prepare<[bigint], PetTuple>(
      `SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ${limit}`).raw(true))
    this.#listByStatus = new StatementPerLimit((limit) => db.prepare<[string, bigint], PetTuple>(
      `SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit}`).raw(true))
    this.#pageAll = new StatementPerLimit((limit) => db.prepare<[bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ${limit})`).raw(true))
    this.#pageByStatus = new StatementPerLimit((limit) => db.prepare<[string, bigint], PageTuple>(
      `SELECT ${PAGE_JSON}, count(*) FROM (SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ${limit})`).raw(true))
    this.#purgeIdempotency = db.prepare<[bigint]>('DELETE FROM idempotency_keys WHERE created_at <= ?')
    this.#insertKey = db.prepare<[string, string, number | null, number | null, string, string, string, string, bigint, bigint | null]>(
      `INSERT INTO api_keys (name, plan, per_minute, per_day, environment, scopes, token_hash, token_hint, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
    // Two lookups by their unique indexes, rather than one `OR` the planner may scan for.
    this.#findKey = db.prepare<[string, string], ApiKeyRow & { previous: bigint }>(
      `SELECT ${KEY_COLUMNS}, 0 AS previous FROM api_keys WHERE token_hash = ?
       UNION ALL SELECT ${KEY_COLUMNS}, 1 AS previous FROM api_keys WHERE previous_token_hash = ?`)
    this.#getKey = db.prepare<[bigint], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`)
    this.#findIssued = db.prepare<[string], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = (SELECT api_key_id FROM api_key_tokens WHERE token_hash = ?)`)
    // LIMIT -1: no limit.
    this.#listKeys = db.prepare<[bigint, number], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > ? ORDER BY id LIMIT ?`)
    this.#insertToken = db.prepare<[bigint, string]>('INSERT INTO api_key_tokens (api_key_id, token_hash) VALUES (?, ?)')
    this.#listTokens = db.prepare<[bigint, number], [bigint, string]>('SELECT id, token_hash FROM api_key_tokens WHERE id > ? ORDER BY id LIMIT ?').raw(true)
    this.#countTokens = db.prepare<[], { n: bigint }>('SELECT count(*) AS n FROM api_key_tokens')
    const addDay = db.prepare<[bigint, bigint, bigint, bigint]>(
      `INSERT INTO key_usage (api_key_id, day, admitted, refused) VALUES (?, ?, ?, ?)
       ON CONFLICT (api_key_id, day) DO UPDATE SET admitted = admitted + excluded.admitted, refused = refused + excluded.refused`)
    const touch = db.prepare<[bigint, bigint, bigint]>('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND coalesce(last_used_at, 0) < ?')
    this.#addUsage = db.transaction((usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>) => {
      for (const { keyId, day, admitted, refused } of usage) addDay.run(BigInt(keyId), BigInt(day), BigInt(admitted), BigInt(refused))
      for (const [keyId, at] of lastUsed) touch.run(BigInt(at), BigInt(keyId), BigInt(at))
    })
    this.#usageOf = db.prepare<[bigint, bigint, bigint], [bigint, bigint, bigint, bigint]>(
      'SELECT api_key_id, day, admitted, refused FROM key_usage WHERE api_key_id = ? AND day BETWEEN ? AND ? ORDER BY day').raw(true)
    // The key and its first token, together.
    this.#createKey = db.transaction((key: NewApiKeyRecord): ApiKeyRecord => {
      const { id } = this.#insertKey.get(key.name, key.plan, key.perMinute, key.perDay, key.environment, scopesColumn(key.scopes),
        key.tokenHash, key.tokenHint, BigInt(key.createdAt), key.expiresAt === null ? null : BigInt(key.expiresAt)) as { id: bigint }
      this.#insertToken.run(id, key.tokenHash)
      return toApiKey(this.#getKey.get(id) as ApiKeyRow)
    })
    this.#changeKey = db.transaction((id: bigint, change: (key: ApiKeyRecord) => ApiKeyChanges): ApiKeyRecord | undefined => {
      const row = this.#getKey.get(id)
      if (row === undefined) return undefined
      const changes = change(toApiKey(row))
      const { set, values } = keyChangeSql(changes, () => '?')
      if (set === '') return toApiKey(row)
      // Changes are rare (an operator's request): the statement is prepared each time.
      db.prepare(`UPDATE api_keys SET ${set} WHERE id = ?`).run(...values.map(sqliteValue), id)
      if (changes.token !== undefined) this.#insertToken.run(id, changes.token.hash)
      return toApiKey(this.#getKey.get(id) as ApiKeyRow)
    })
    const insert = ({ pet, idempotency }: PendingInsert): CreateOnceResult => {
      if (idempotency !== undefined) {
        const earlier = this.#findIdempotency.get(BigInt(idempotency.apiKeyId), idempotency.key, BigInt(idempotency.liveAfter))
        if (earlier !== undefined) return { created: false, requestHash: earlier.request_hash, pet: toPet(earlier) }
      }
      const { id } = this.#insertPet.get(pet.name, pet.categoryId, pet.status) as { id: bigint }
      if (idempotency !== undefined) {
        this.#insertIdempotency.run(BigInt(idempotency.apiKeyId), idempotency.key,
          idempotency.requestHash, id, BigInt(idempotency.createdAt))
      }
      return { created: true, pet: { id, ...pet } }
    }
    this.#insertRows = new StatementPerLimit((rows) => db.prepare<[values: Array<string | bigint>]>(
      `INSERT INTO pets (name, category_id, status) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?)').join(', ')}`), INSERT_ROWS)
    // No savepoint each, since a validated animal's insert rarely fails: if one
    // does, commitEach does the group again. Plain animals go INSERT_ROWS to a
    // statement, their ids the last id and those just below it; a row not added
    // would shift them, so that too falls back (docs/INTERNALS.md, section "SQLite").
    const commitAll = db.transaction((group: PendingInsert[]): InsertOutcome[] => {
      const outcomes: InsertOutcome[] = new Array<InsertOutcome>(group.length)
      const plain: number[] = []
      group.forEach((pending, index) => {
        if (pending.idempotency === undefined) plain.push(index)
        else outcomes[index] = { ok: true, result: insert(pending) }
      })
      for (let start = 0; start < plain.length; start += INSERT_ROWS) {
        const chunk = plain.slice(start, start + INSERT_ROWS)
        const values: Array<string | bigint> = []
        for (const index of chunk) {
          const { pet } = group[index] as PendingInsert
          values.push(pet.name, pet.categoryId, pet.status)
        }
        const { changes, lastInsertRowid } = this.#insertRows.for(chunk.length).run(values)
        if (changes !== chunk.length) throw new Error(`an INSERT of ${chunk.length} animals added ${changes}`)
        const first = BigInt(lastInsertRowid) - BigInt(chunk.length - 1)
        chunk.forEach((index, i) => {
          const { pet } = group[index] as PendingInsert
          outcomes[index] = { ok: true, result: { created: true, pet: { id: first + BigInt(i), ...pet } } }
        })
      }
      return outcomes
    })
    // Called inside commitEach's transaction, a better-sqlite3 transaction
    // function runs in a savepoint: if it throws, its rows (the animal and
    // its idempotency record) are rolled back and the group goes on.
    // https://github.com/WiseLibs/better-sqlite3/blob/master/docs/api.md#transactionfunction---function
    const insertOne = db.transaction(insert)
    const commitEach = db.transaction((group: PendingInsert[]): InsertOutcome[] =>
      group.map((insert, index) => {
        try {
          return { ok: true, result: insertOne(insert) }
        } catch (error) {
          // An unavailable database fails (or retries) the whole group.
          if (isUnavailable(error)) throw error
          // After some errors (RAISE(ROLLBACK), out of memory) SQLite has
          // rolled back the whole transaction itself: the inserts before
          // this one are gone, and any after it would commit on their own.
          // https://www.sqlite.org/lang_transaction.html#response_to_errors_within_a_transaction
          if (!db.inTransaction) throw new GroupRolledBack(index, error)
          return { ok: false, error }
        }
      }))
    this.#group = new GroupCommit({
      commitAll: (group) => commitAll.immediate(group),
      commitEach: (group) => commitEach.immediate(group),
      busyBudgetMs,
      turn: writeTurn,
      written: (failure) => { this.#writeFailure = failure }
    })
  }

  async createPet (pet: NewPetRecord): Promise<PetRecord> {
    const result = await this.#group.add(pet, undefined)
    return result.pet
  }

  createPetOnce (pet: NewPetRecord, idempotency: IdempotencyRecord): Promise<CreateOnceResult> {
    return this.#group.add(pet, idempotency)
  }

  async getPet (id: bigint): Promise<PetRecord | undefined> {
    const row = this.#read(() => this.#getPet.get(id))
    return row === undefined ? undefined : toPet(row)
  }

  async listPets ({ afterId, status, limit }: ListPetsQuery): Promise<PetRecord[]> {
    const rows = this.#read(() => status === undefined
      ? this.#listAll.for(limit).all(afterId)
      : this.#listByStatus.for(limit).all(status, afterId))
    return rows.map(([id, name, categoryId, status]) => ({ id, name, categoryId, status }))
  }

  async getPetJson (id: bigint): Promise<Buffer | undefined> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    const kept = this.#pets.get(id)
    if (kept !== undefined) return kept
    const json = this.#read(() => this.#getPetJson.get(id))
    if (json === undefined) return undefined
    const bytes = Buffer.from(json)
    this.#pets.set(id, bytes)
    return bytes
  }

  async listPetsJson ({ afterId, status, size }: PetPageQuery): Promise<PetPageJson> {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    const key = `${status ?? ''} ${afterId} ${size}`
    const kept = this.#fullPages.get(key)
    if (kept !== undefined) return kept
    // One animal more than the page: it says whether another page follows, and is cut off.
    const [json, count] = this.#read(() => (status === undefined
      ? this.#pageAll.for(size + 1).get(afterId)
      : this.#pageByStatus.for(size + 1).get(status, afterId)) as PageTuple)
    if (Number(count) <= size) return { json: Buffer.from(json), nextAfterId: undefined }
    const page = json.slice(0, json.lastIndexOf(',' + ANIMAL_START)) + ']'
    const last = page.lastIndexOf(ANIMAL_START) + ANIMAL_START.length
    const full = { json: Buffer.from(page), nextAfterId: BigInt(page.slice(last, page.indexOf(',', last))) }
    this.#fullPages.set(key, full)
    return full
  }

  async purgeIdempotentRequests (createdBefore: number): Promise<number> {
    return this.#write(() => this.#purgeIdempotency.run(BigInt(createdBefore)).changes)
  }

  async createApiKey (key: NewApiKeyRecord): Promise<ApiKeyRecord> {
    return this.#write(() => this.#createKey.immediate(key))
  }

  async findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyMatch | undefined> {
    const row = this.#read(() => this.#findKey.get(tokenHash, tokenHash))
    return row === undefined ? undefined : { key: toApiKey(row), previous: row.previous === 1n }
  }

  async findApiKeyByIssuedToken (tokenHash: string): Promise<ApiKeyRecord | undefined> {
    const row = this.#read(() => this.#findIssued.get(tokenHash))
    return row === undefined ? undefined : toApiKey(row)
  }

  async getApiKey (id: number): Promise<ApiKeyRecord | undefined> {
    const row = this.#read(() => this.#getKey.get(BigInt(id)))
    return row === undefined ? undefined : toApiKey(row)
  }

  async listApiKeys (afterId = 0, limit?: number): Promise<ApiKeyRecord[]> {
    return this.#read(() => this.#listKeys.all(BigInt(afterId), limit ?? -1)).map(toApiKey)
  }

  async changeApiKey (id: number, change: (key: ApiKeyRecord) => ApiKeyChanges): Promise<ApiKeyRecord | undefined> {
    return this.#write(() => this.#changeKey.immediate(BigInt(id), change))
  }

  async listTokenHashes (afterId: number, limit: number): Promise<IssuedToken[]> {
    // Every instance's index of tokens reads it every 500 ms: prepared once.
    const rows = this.#read(() => this.#listTokens.all(BigInt(afterId), limit))
    return rows.map(([id, tokenHash]) => ({ id: Number(id), tokenHash }))
  }

  async countTokens (): Promise<number> {
    const row = this.#read(() => this.#countTokens.get())
    return Number(row?.n ?? 0n)
  }

  async addUsage (usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>): Promise<void> {
    await this.#write(() => { this.#addUsage.immediate(usage, lastUsed) })
  }

  async usageOf (keyId: number, fromDay: number, toDay: number): Promise<KeyUsage[]> {
    const rows = this.#read(() => this.#usageOf.all(BigInt(keyId), BigInt(fromDay), BigInt(toDay)))
    return rows.map(([id, day, admitted, refused]) => ({ keyId: Number(id), day: Number(day), admitted: Number(admitted), refused: Number(refused) }))
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

  poolUse (): undefined {
    return undefined
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

  async searchApiKeys (search: KeySearch): Promise<ApiKeyRecord[]> {
    const { sql, values } = keySearchSql(search, () => '?')
    // Filters vary with each search, and searches are an operator's: prepared each time.
    return this.#read(() => this.#db.prepare<unknown[], ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ${sql}`).all(...values.map(sqliteValue))).map(toApiKey)
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

  async countApiKeys (now: number): Promise<KeyCount[]> {
    const rows = this.#read(() => this.#db.prepare<[bigint], [KeyCount['state'], KeyCount['plan'], bigint]>(
      `SELECT ${stateSql('?')} AS state, plan, count(*) FROM api_keys GROUP BY 1, 2 ORDER BY 1, 2`).raw(true).all(BigInt(now)))
    return rows.map(([state, plan, count]) => ({ state, plan, count: Number(count) }))
  }
}

/** Whole numbers bound as SQLite integers (better-sqlite3 binds a number as a float). */
function sqliteValue (value: unknown): unknown {
  return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value
}
