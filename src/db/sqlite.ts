// The embedded backend: one SQLite file, WAL mode, every commit fsynced.
//
// better-sqlite3 is synchronous, so a commit blocks the event loop for one
// fsync. Inserts that arrive together are therefore grouped: each is queued,
// and one transaction (one fsync) commits the whole queue on the next turn of
// the loop. Every caller's promise resolves only after that commit.
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { StorageUnavailableError } from '../errors.js'
import type { PetStatus } from '../schemas/pet.js'
import type { Plan } from '../limits/plans.js'
import type { Environment } from '../config.js'
import { migrateSqlite } from './sqlite-schema.js'
import type {
  ApiKeyRecord, IdempotencyRecord, ListPetsQuery, NewApiKeyRecord, NewPetRecord,
  PetRecord, Storage, StoredIdempotentRequest
} from './storage.js'

interface PetRow { id: bigint, name: string, category_id: bigint, status: PetStatus }
interface ApiKeyRow {
  id: bigint,
  name: string,
  plan: Plan,
  per_minute: bigint | null,
  per_day: bigint | null,
  environment: Environment,
  created_at: bigint,
  revoked_at: bigint | null
}
interface PendingInsert {
  pet: NewPetRecord
  idempotency: IdempotencyRecord | undefined
  resolve: (pet: PetRecord) => void
  reject: (error: unknown) => void
}

/** Accepts `sqlite:PATH` and `sqlite::memory:`. */
export function sqlitePath (url: string): string {
  return url.replace(/^sqlite:/, '')
}

export function openSqlite (url: string): SqliteStorage {
  const path = sqlitePath(url)
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { timeout: 5000 })
  // Every connection: the settings are per connection, and better-sqlite3
  // does not keep them across a reopen. https://www.sqlite.org/pragma.html#pragma_synchronous
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.defaultSafeIntegers(true)
  migrateSqlite(db)
  return new SqliteStorage(db)
}

export class SqliteStorage implements Storage {
  readonly backend = 'sqlite'
  readonly #db: Database.Database
  #pending: PendingInsert[] = []
  #flushScheduled = false
  #closed = false

  readonly #insertPet
  readonly #insertIdempotency
  readonly #getPet
  readonly #listAll
  readonly #listByStatus
  readonly #findIdempotency
  readonly #purgeIdempotency
  readonly #insertKey
  readonly #findKey
  readonly #getKey
  readonly #listKeys
  readonly #revokeKey
  readonly #commitGroup

  constructor (db: Database.Database) {
    this.#db = db
    this.#insertPet = db.prepare<[string, bigint, string]>(
      'INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id')
    this.#insertIdempotency = db.prepare<[bigint, string, string, bigint, bigint]>(
      `INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash,
         pet_id = excluded.pet_id, created_at = excluded.created_at`)
    this.#getPet = db.prepare<[bigint], PetRow>('SELECT id, name, category_id, status FROM pets WHERE id = ?')
    this.#listAll = db.prepare<[bigint, number], PetRow>(
      'SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?')
    this.#listByStatus = db.prepare<[string, bigint, number], PetRow>(
      'SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?')
    this.#findIdempotency = db.prepare<[bigint, string, bigint], PetRow & { request_hash: string, created_at: bigint }>(
      `SELECT p.id, p.name, p.category_id, p.status, i.request_hash, i.created_at
       FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id
       WHERE i.api_key_id = ? AND i.key = ? AND i.created_at > ?`)
    this.#purgeIdempotency = db.prepare<[bigint]>('DELETE FROM idempotency_keys WHERE created_at <= ?')
    this.#insertKey = db.prepare<[string, string, number | null, number | null, string, string, bigint]>(
      `INSERT INTO api_keys (name, plan, per_minute, per_day, environment, token_hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`)
    const keyColumns = 'id, name, plan, per_minute, per_day, environment, created_at, revoked_at'
    this.#findKey = db.prepare<[string], ApiKeyRow>(`SELECT ${keyColumns} FROM api_keys WHERE token_hash = ?`)
    this.#getKey = db.prepare<[bigint], ApiKeyRow>(`SELECT ${keyColumns} FROM api_keys WHERE id = ?`)
    this.#listKeys = db.prepare<[], ApiKeyRow>(`SELECT ${keyColumns} FROM api_keys ORDER BY id`)
    this.#revokeKey = db.prepare<[bigint, bigint]>('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
    this.#commitGroup = db.transaction((group: PendingInsert[]) =>
      group.map(({ pet, idempotency }) => {
        const { id } = this.#insertPet.get(pet.name, pet.categoryId, pet.status) as { id: bigint }
        if (idempotency !== undefined) {
          this.#insertIdempotency.run(BigInt(idempotency.apiKeyId), idempotency.key,
            idempotency.requestHash, id, BigInt(idempotency.createdAt))
        }
        return { id, ...pet }
      }))
  }

  createPet (pet: NewPetRecord, idempotency?: IdempotencyRecord): Promise<PetRecord> {
    if (this.#closed) return Promise.reject(new StorageUnavailableError('the database is closed'))
    return new Promise((resolve, reject) => {
      this.#pending.push({ pet, idempotency, resolve, reject })
      if (!this.#flushScheduled) {
        this.#flushScheduled = true
        setImmediate(() => this.#flush())
      }
    })
  }

  #flush (): void {
    this.#flushScheduled = false
    const group = this.#pending
    this.#pending = []
    if (group.length === 0) return
    let created: PetRecord[]
    try {
      created = this.#commitGroup.immediate(group)
    } catch (error) {
      const failure = unavailable(error)
      for (const insert of group) insert.reject(failure)
      return
    }
    group.forEach((insert, i) => insert.resolve(created[i] as PetRecord))
  }

  async getPet (id: bigint): Promise<PetRecord | undefined> {
    const row = this.#run(() => this.#getPet.get(id))
    return row === undefined ? undefined : toPet(row)
  }

  async listPets ({ afterId, status, limit }: ListPetsQuery): Promise<PetRecord[]> {
    const rows = this.#run(() => status === undefined
      ? this.#listAll.all(afterId, limit)
      : this.#listByStatus.all(status, afterId, limit))
    return rows.map(toPet)
  }

  async findIdempotentRequest (apiKeyId: number, key: string, createdAfter: number): Promise<StoredIdempotentRequest | undefined> {
    const row = this.#run(() => this.#findIdempotency.get(BigInt(apiKeyId), key, BigInt(createdAfter)))
    if (row === undefined) return undefined
    return { requestHash: row.request_hash, pet: toPet(row), createdAt: Number(row.created_at) }
  }

  async purgeIdempotentRequests (createdBefore: number): Promise<number> {
    return this.#run(() => this.#purgeIdempotency.run(BigInt(createdBefore)).changes)
  }

  async createApiKey (key: NewApiKeyRecord): Promise<ApiKeyRecord> {
    return this.#run(() => {
      const { id } = this.#insertKey.get(key.name, key.plan, key.perMinute, key.perDay,
        key.environment, key.tokenHash, BigInt(key.createdAt)) as { id: bigint }
      return toApiKey(this.#getKey.get(id) as ApiKeyRow)
    })
  }

  async findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyRecord | undefined> {
    const row = this.#run(() => this.#findKey.get(tokenHash))
    return row === undefined ? undefined : toApiKey(row)
  }

  async listApiKeys (): Promise<ApiKeyRecord[]> {
    return this.#run(() => this.#listKeys.all()).map(toApiKey)
  }

  async revokeApiKey (id: number, at: number): Promise<boolean> {
    return this.#run(() => this.#revokeKey.run(BigInt(at), BigInt(id)).changes > 0)
  }

  async secret (name: string): Promise<Buffer> {
    return this.#run(() => {
      this.#db.prepare('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING')
        .run(name, randomBytes(32))
      const row = this.#db.prepare<[string], { value: Buffer }>('SELECT value FROM secrets WHERE name = ?').get(name)
      return (row as { value: Buffer }).value
    })
  }

  async ping (): Promise<void> {
    this.#run(() => this.#db.prepare('SELECT 1').get())
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#flush()
    this.#db.close()
  }

  #run<T> (work: () => T): T {
    if (this.#closed) throw new StorageUnavailableError('the database is closed')
    try {
      return work()
    } catch (error) {
      throw unavailable(error)
    }
  }
}

/** Busy, locked, full or broken: the client may retry later; the cause goes to the log, not to it. */
function unavailable (error: unknown): Error {
  if (error instanceof Database.SqliteError) {
    return new StorageUnavailableError(`SQLite: ${error.code}: ${error.message}`, { cause: error })
  }
  return error instanceof Error ? error : new Error(String(error))
}

function toPet (row: PetRow): PetRecord {
  return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }
}

function toApiKey (row: ApiKeyRow): ApiKeyRecord {
  return {
    id: Number(row.id),
    name: row.name,
    plan: row.plan,
    perMinute: row.per_minute === null ? null : Number(row.per_minute),
    perDay: row.per_day === null ? null : Number(row.per_day),
    environment: row.environment,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at)
  }
}
