// The storage contract. Each backend (SQLite, PostgreSQL) implements it in
// full; one test suite runs against each. Nothing here knows about HTTP.
//
// A call that fails for want of the database (unreachable, locked by
// another client, out of disk: a retry later may succeed) rejects with
// StorageUnavailableError, which the clients see as 503; any other failure
// is a fault on our side and rejects with the error as it is (500).
import type { Environment, PetStatus, Plan, Scope } from '../domain.js'

export interface PetRecord {
  id: bigint
  name: string
  categoryId: bigint
  status: PetStatus
}

export interface NewPetRecord {
  name: string
  categoryId: bigint
  status: PetStatus
}

/** Remembers a created animal under a client's Idempotency-Key, in the same commit. */
export interface IdempotencyRecord {
  apiKeyId: number
  key: string
  requestHash: string
  createdAt: number
  /** An earlier record with the same key made after this instant still stands. */
  liveAfter: number
}

export type CreateOnceResult =
  | { created: true, pet: PetRecord }
  /** A live record had this key: nothing was added. */
  | { created: false, requestHash: string, pet: PetRecord }

export interface ListPetsQuery {
  /** Only animals with an id above this one (the cursor). */
  afterId: bigint
  status: PetStatus | undefined
  /** From 1 to one more than the largest page, so that the caller sees whether another page follows. */
  limit: number
}

export interface PetPageQuery {
  /** Only animals with an id above this one (the cursor). */
  afterId: bigint
  status: PetStatus | undefined
  /** The page's size, from 1 to the largest page. */
  size: number
}

/** A page of animals as the bytes the API sends: a JSON array of Pet objects. */
export interface PetPageJson {
  json: Buffer
  /** The id of the page's last animal when more animals follow it; undefined on the last page. */
  nextAfterId: bigint | undefined
}

export interface ApiKeyRecord {
  id: number
  name: string
  plan: Plan
  /** Limits set on the key itself; `null` means the plan's. */
  perMinute: number | null
  perDay: number | null
  environment: Environment
  /** At least one, in the order of SCOPES. */
  scopes: Scope[]
  /** The token's prefix and last four characters (`pet_live_…Wx3k`); the prefix alone for keys made before hints were kept. */
  tokenHint: string
  createdAt: number
  /** From this instant on the key is refused; null: never. */
  expiresAt: number | null
  /** Not written yet: null. */
  lastUsedAt: number | null
  revokedAt: number | null
}

export interface NewApiKeyRecord {
  name: string
  plan: Plan
  perMinute: number | null
  perDay: number | null
  environment: Environment
  scopes: Scope[]
  tokenHash: string
  tokenHint: string
  createdAt: number
  expiresAt: number | null
}

/** A key's id and token hash: what an in-memory index of every token that may be valid is built from. */
export interface ApiKeyHash {
  id: number
  tokenHash: string
}

export interface PoolUse {
  /** Connections open, idle or not. */
  open: number
  idle: number
  /** Queries waiting for a connection. */
  waiting: number
  max: number
}

export interface Storage {
  readonly backend: 'sqlite' | 'postgres'
  /** Resolves only once the animal is durably committed. */
  createPet (pet: NewPetRecord): Promise<PetRecord>
  /**
   * Adds the animal unless a live record already holds this Idempotency-Key;
   * the check and the insert of both rows are one transaction, so that
   * instances sharing the database never add it twice.
   */
  createPetOnce (pet: NewPetRecord, idempotency: IdempotencyRecord): Promise<CreateOnceResult>
  getPet (id: bigint): Promise<PetRecord | undefined>
  /**
   * The same animal, written as JSON by the database itself: the bytes the
   * response schema's serializer would write from `getPet`'s record. A
   * backend without it is read with `getPet`.
   */
  getPetJson?: (id: bigint) => Promise<Buffer | undefined>
  listPets (query: ListPetsQuery): Promise<PetRecord[]>
  /**
   * The same page, written as JSON by the database itself: the bytes the
   * response schema's serializer would write from `listPets`'s rows, key
   * for key. A backend without it is listed with `listPets`.
   */
  listPetsJson?: (query: PetPageQuery) => Promise<PetPageJson>
  /** Forgets idempotency records made before this instant; says how many. */
  purgeIdempotentRequests (createdBefore: number): Promise<number>

  createApiKey (key: NewApiKeyRecord): Promise<ApiKeyRecord>
  findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyRecord | undefined>
  getApiKey (id: number): Promise<ApiKeyRecord | undefined>
  listApiKeys (): Promise<ApiKeyRecord[]>
  revokeApiKey (id: number, at: number): Promise<boolean>
  /**
   * The keys with an id above `afterId`, lowest id first, at most `limit`
   * of them: every environment, revoked ones too. Ids only grow, so a
   * reader that remembers the highest it has seen asks for new keys alone.
   */
  listApiKeyHashes (afterId: number, limit: number): Promise<ApiKeyHash[]>
  /** How many keys there are, revoked ones too. */
  countApiKeys (): Promise<number>

  /** The connection pool's use, for metrics; undefined where there is no pool (SQLite). */
  poolUse (): PoolUse | undefined

  /** A random secret shared by every instance on this database, made on first use. */
  secret (name: string): Promise<Buffer>
  ping (): Promise<void>
  close (): Promise<void>
}
