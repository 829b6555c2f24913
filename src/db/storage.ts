// The storage contract, implemented in full by each backend (SQLite, PostgreSQL)
// and tested against each; nothing here knows about HTTP. A call that fails for
// want of the database (a retry later may succeed) rejects with
// StorageUnavailableError (503); any other failure rejects as it is (500).
import type { Environment, EventType, KeySort, KeyState, PetStatus, Plan, Scope } from '../domain.js'
import type { Pet } from '../schemas/pet.js'

/** An animal as the API writes it: its fields are the schema's (docs/DEVELOPING.md: Adding a field to the animal). */
export type PetRecord = Pet

/** An animal to add, every field given: the id is the database's. */
export type NewPetRecord = Omit<Pet, 'id'>

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
  /** Requests in flight at once, set on the key itself; `null` means the plan's. */
  concurrency: number | null
  environment: Environment
  /** At least one, in the order of SCOPES. */
  scopes: Scope[]
  /** The token's prefix and last four characters (`pet_live_…Wx3k`); the prefix alone for keys made before hints were kept. */
  tokenHint: string
  createdAt: number
  /** From this instant on the key is refused; null: never. */
  expiresAt: number | null
  /** The last admitted request, written with the usage counts (up to USAGE_FLUSH_MS late); null: none yet. */
  lastUsedAt: number | null
  revokedAt: number | null
  /** While a roll's overlap runs, when the token before the current one stops working; else null. */
  previousTokenExpiresAt: number | null
}

/** A key found by one of its tokens. */
export interface ApiKeyMatch {
  key: ApiKeyRecord
  /** The token is the key's previous one, valid only until `key.previousTokenExpiresAt`. */
  previous: boolean
}

/** What a change to a key sets; a field left out keeps its value. */
export interface ApiKeyChanges {
  name?: string
  plan?: Plan
  /** Null: the plan's. */
  perMinute?: number | null
  perDay?: number | null
  concurrency?: number | null
  scopes?: Scope[]
  expiresAt?: number | null
  revokedAt?: number
  /**
   * A new token. The current one becomes the previous, valid until
   * `previousValidUntil`; null ends it at once. A previous token the key
   * had before ends at once either way: a key has at most two.
   */
  token?: { hash: string, hint: string, previousValidUntil: number | null }
}

/** A key as it is made: its first token's hash, and what the record starts with. */
export type NewApiKeyRecord = Pick<ApiKeyRecord, 'name' | 'plan' | 'perMinute' | 'perDay' | 'concurrency' | 'environment' | 'scopes' | 'tokenHint' | 'createdAt' | 'expiresAt'> & {
  tokenHash: string
}

/** A token as issued, numbered in the order tokens were issued: what an in-memory index of every token that may be valid is built from. */
export interface IssuedToken {
  id: number
  tokenHash: string
}

/** Requests one key made on one UTC day, as counted by one instance since its last write, or as stored. */
export interface KeyUsage {
  keyId: number
  /** Days since 1970-01-01, UTC. */
  day: number
  /** Served, whatever the status. */
  admitted: number
  /** Refused for the key's limit or ban (429). */
  refused: number
}

/** Calls of one deprecated operation by one key on one UTC day, as counted by one instance since its last write, or as stored. */
export interface DeprecatedCalls {
  keyId: number
  /** The operation's operationId. */
  operation: string
  /** Days since 1970-01-01, UTC. */
  day: number
  calls: number
  /** The last call's time, Unix milliseconds. */
  lastCall: number
}

/** A key's calls of a deprecated operation over some days, added up. */
export interface DeprecatedCaller {
  operation: string
  key: ApiKeyRecord
  calls: number
  lastCall: number
}

export interface PoolUse {
  /** Connections open, idle or not. */
  open: number
  idle: number
  /** Queries waiting for a connection. */
  waiting: number
  max: number
  /** How long the query that has waited longest of those still waiting has waited, in milliseconds; 0 when none waits. */
  longestWaitMs: number
}

/** The animals: added durably, and read. */
export interface PetStore {
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
}

/** The API keys and every token they were issued. */
export interface KeyStore {
  /** `event`: what the new key announces, written in the same transaction. */
  createApiKey (key: NewApiKeyRecord, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord>
  /** The key whose current or previous token has this hash, whatever its state. */
  findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyMatch | undefined>
  /** The key that was ever issued a token with this hash, rolled away long ago or not, whatever its state. */
  findApiKeyByIssuedToken (tokenHash: string): Promise<ApiKeyRecord | undefined>
  getApiKey (id: number): Promise<ApiKeyRecord | undefined>
  /** The keys with an id above `afterId`, lowest first, at most `limit` (default: all): revoked ones too. */
  listApiKeys (afterId?: number, limit?: number): Promise<ApiKeyRecord[]>
  /**
   * Reads the key, asks `change` what to change, and writes that, in one
   * transaction: no other change to the key comes between the read and
   * the write. `change` may throw, and nothing is changed. Undefined when
   * no key has this id. `event`: what the change announces, made from the
   * key as written and written in the same transaction; asked only when
   * something was changed.
   */
  changeApiKey (id: number, change: (key: ApiKeyRecord) => ApiKeyChanges, event?: EventOf<ApiKeyRecord>): Promise<ApiKeyRecord | undefined>
  /**
   * The tokens issued after the one numbered `afterId`, in the order
   * issued, at most `limit` of them: every key's, revoked ones too.
   * Numbers only grow, so a reader that remembers the highest it has seen
   * asks for new tokens alone.
   */
  listTokenHashes (afterId: number, limit: number): Promise<IssuedToken[]>
  /** How many tokens were ever issued. */
  countTokens (): Promise<number>
  /** A page of the keys that match, in the order asked for: the operator console's list. */
  searchApiKeys (search: KeySearch): Promise<ApiKeyRecord[]>
  /** The number of keys of each plan and state at `now`; pairs without keys are left out. */
  countApiKeys (now: number): Promise<KeyCount[]>
}

/** What each key used, per UTC day. */
export interface UsageStore {
  /**
   * Adds counts to what is stored, in one transaction: each row to its
   * key and day (one additive upsert each, so that every instance's counts
   * add up), and each key's last use, which only moves forward. A key
   * deleted meanwhile cannot be: keys are revoked, never deleted. Calls of
   * deprecated operations are added the same way, each row to its key,
   * operation and day, its last call only moving forward.
   */
  addUsage (usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>, deprecatedCalls?: readonly DeprecatedCalls[]): Promise<void>
  /** A key's stored counts for the days from `fromDay` to `toDay`, oldest first; days without any are left out. */
  usageOf (keyId: number, fromDay: number, toDay: number): Promise<KeyUsage[]>
  /** Every key's counts added up per day, from `fromDay` to `toDay`, oldest first; days without any are left out. */
  usageTotals (fromDay: number, toDay: number): Promise<DayTotals[]>
  /** The `limit` keys with the most requests (admitted and refused) on `day`, most first, then by id. */
  busiestKeys (day: number, limit: number): Promise<KeyDayUsage[]>
  /** Every key that called a deprecated operation from `fromDay` to `toDay`, its calls added up: by operation, then most calls first, then by key id. */
  deprecatedCallers (fromDay: number, toDay: number): Promise<DeprecatedCaller[]>
}

/** An event as its change writes it, in the change's own transaction (docs/WEBHOOKS.md). */
export interface NewEvent {
  type: EventType
  createdAt: number
  /** The event's `data`, as JSON. */
  data: string
}

/** What a change announces, made from the record as written: one event, several (a leak's revocation), or undefined: nothing. */
export type EventOf<T> = (record: T) => NewEvent | readonly NewEvent[] | undefined

export interface WebhookRecord {
  id: number
  url: string
  /** Null: every type. */
  events: EventType[] | null
  description: string
  enabled: boolean
  /** The signing secret's bytes: HMAC needs them as they are. */
  secret: Buffer
  /** The secret before the last roll, which signs too until `previousSecretExpiresAt`; null when the roll ended it at once. */
  previousSecret: Buffer | null
  previousSecretExpiresAt: number | null
  /** Since when every attempt has failed: the first failure after the last success; null while they succeed. */
  failingSince: number | null
  /** Why and when the service disabled the endpoint; null when it did not, or once it is enabled or disabled again by an operator. */
  disabledReason: string | null
  disabledAt: number | null
  createdAt: number
  updatedAt: number
}

export type NewWebhookRecord = Omit<WebhookRecord, 'id' | 'previousSecret' | 'previousSecretExpiresAt' | 'failingSince' | 'disabledReason' | 'disabledAt'>

/** What a change to an endpoint sets; a field left out keeps its value. */
export interface WebhookChanges {
  url?: string
  events?: EventType[] | null
  description?: string
  /** Set by an operator: the service's reason for disabling, and the failing streak, are cleared with it. */
  enabled?: boolean
  updatedAt: number
}

/** A delivery taken by one dispatcher, with what it sends and where. */
export interface DueDelivery {
  eventId: bigint
  endpointId: number
  /** Attempts made so far, this one included. */
  attempts: number
  type: string
  /** When the event was made: retries stop some days after it. */
  createdAt: number
  data: string
  url: string
  secret: Buffer
  /** Signs too while `previousSecretExpiresAt` lies ahead. */
  previousSecret: Buffer | null
  previousSecretExpiresAt: number | null
}

/** How an attempt went: `pending` goes again at `nextAttemptAt`. */
export interface DeliveryOutcome {
  eventId: bigint
  endpointId: number
  state: 'pending' | 'succeeded' | 'failed'
  nextAttemptAt: number
  lastStatus: number | null
  lastError: string | null
  /** When the attempt was made: a failure's time starts its endpoint's failing streak. */
  attemptedAt: number
}

/** A delivery as operators see it: its event, and how its attempts went. */
export interface DeliveryRecord {
  eventId: bigint
  type: string
  createdAt: number
  state: 'pending' | 'succeeded' | 'failed'
  attempts: number
  nextAttemptAt: number
  lastStatus: number | null
  lastError: string | null
}

export interface ClaimQuery {
  now: number
  /** Taken deliveries are due again from this instant: a dispatcher that died leaves them to another. */
  leaseUntil: number
  limit: number
  /** Endpoints with as many deliveries in flight as they may have. */
  skipEndpoints: readonly number[]
}

/** Webhook endpoints, the events written with changes, and their deliveries. */
export interface WebhookStore {
  createWebhook (webhook: NewWebhookRecord): Promise<WebhookRecord>
  getWebhook (id: number): Promise<WebhookRecord | undefined>
  /** Endpoints with an id above `afterId`, lowest first, at most `limit`. */
  listWebhooks (afterId: number, limit: number): Promise<WebhookRecord[]>
  /** Undefined when no endpoint has this id. */
  changeWebhook (id: number, changes: WebhookChanges): Promise<WebhookRecord | undefined>
  /**
   * Gives the endpoint a new secret; the current one becomes the previous
   * one until `previousExpiresAt`, or is dropped with the previous one at
   * once when that is null. Undefined when no endpoint has this id.
   */
  rollWebhookSecret (id: number, secret: Buffer, previousExpiresAt: number | null, now: number): Promise<WebhookRecord | undefined>
  /** Removes the endpoint and its deliveries; undefined when no endpoint has this id. */
  deleteWebhook (id: number): Promise<WebhookRecord | undefined>
  /**
   * Gives up to `limit` events not fanned out yet one pending delivery,
   * due at `now`, for each enabled endpoint that wants its type, and marks
   * them fanned out, in one transaction; an event no endpoint wants is
   * forgotten. Says how many events it took. Instances sharing the
   * database never take the same event.
   */
  fanOutEvents (limit: number, now: number): Promise<number>
  /** Takes due deliveries of enabled endpoints, oldest due first, each due again at `leaseUntil`; instances never take the same one at once. */
  claimDeliveries (query: ClaimQuery): Promise<DueDelivery[]>
  /**
   * Writes how attempts went, in one transaction, and each endpoint's
   * failing streak: ended by a success, started by a failure after one.
   */
  recordDeliveries (outcomes: readonly DeliveryOutcome[]): Promise<void>
  /** Disables the enabled endpoints failing since `failingSince` or before, with the reason given; answers them. */
  disableFailingEndpoints (failingSince: number, reason: (endpoint: WebhookRecord) => string, now: number): Promise<WebhookRecord[]>
  /** An endpoint's deliveries with an event id below `beforeEventId` (null: from the newest), newest first, at most `limit`. */
  listDeliveries (endpointId: number, beforeEventId: bigint | null, limit: number): Promise<DeliveryRecord[]>
  /** Forgets events made before this instant with no delivery pending; says how many. */
  purgeEvents (createdBefore: number): Promise<number>
  /**
   * When the oldest event still to deliver was made: not fanned out yet, or
   * with a delivery pending to an enabled endpoint; undefined when none is.
   */
  oldestUndeliveredEvent (): Promise<number | undefined>
  /**
   * Makes a succeeded or failed delivery pending again, due at `now`, its
   * attempts and last answer kept; false when there is no such delivery or
   * it is pending already.
   */
  resendDelivery (endpointId: number, eventId: bigint, now: number): Promise<boolean>
  /**
   * Writes an event for one endpoint alone, with its pending delivery, in
   * one transaction: never fanned out to others. Its id, or undefined when
   * no endpoint has this id.
   */
  addEndpointEvent (endpointId: number, event: { type: string, createdAt: number, data: string }): Promise<bigint | undefined>
  /**
   * Writes `event` with the row that says it was announced, in one
   * transaction, unless that row was written before (by this instance or
   * another): says whether it wrote them.
   */
  announceOnce (once: KeyAnnouncement, event: NewEvent): Promise<boolean>
  /**
   * Keys not revoked whose expiry is after `after` and at most `until`,
   * without a `type` announced for that expiry: soonest first, at most `limit`.
   */
  keysToAnnounce (type: EventType, after: number, until: number, limit: number): Promise<ApiKeyRecord[]>
}

/** What is announced once of a key: its type, and the day or the expiry it is about. */
export interface KeyAnnouncement {
  keyId: number
  type: EventType
  /** Days from 1970-01-01 (UTC) for a quota event; the expiry, Unix milliseconds, for an expiry event. */
  at: number
}

/** Where a token of a key was found, and by which report (docs/KEYS.md: Leaked tokens). */
export interface KeyLeakRecord {
  keyId: number
  /** Which report named the token: `github:` and the SHA-256 of the report's bytes, or `holder` for the holder's own revocation; a key is named once per report. */
  report: string
  /** Where the token was seen (a commit's file, a gist), as the report says; null when it says nothing. */
  url: string | null
  /** Which kind of place (`content`, `commit`, `npm`, …), as the report says; null when it says nothing. */
  source: string | null
  /** When the report arrived. */
  foundAt: number
}

/** Leaks reported of keys: each once per report, kept with the key for good. */
export interface LeakStore {
  /** Records a leak unless this report named this key before; true when it is new. */
  addKeyLeak (leak: KeyLeakRecord): Promise<boolean>
  /** The first leak recorded of each of these keys that has one. */
  firstKeyLeaks (keyIds: readonly number[]): Promise<KeyLeakRecord[]>
  /** How many keys have a leak recorded. */
  countLeakedKeys (): Promise<number>
}

/** The database itself. */
export interface StoreConnection {
  readonly backend: 'sqlite' | 'postgres'
  /** The connection pool's use, for metrics; undefined where there is no pool (SQLite). */
  poolUse (): PoolUse | undefined

  /** A random secret shared by every instance on this database, made on first use. */
  secret (name: string): Promise<Buffer>
  ping (): Promise<void>
  close (): Promise<void>
}

/** What the service keeps, on SQLite or PostgreSQL (db/sqlite/storage.ts, db/postgres/storage.ts): each part is named for those who need only it. */
export interface Storage extends PetStore, KeyStore, UsageStore, WebhookStore, LeakStore, StoreConnection {}

/** Which keys a page of the key list holds, and in which order. */
export interface KeySearch {
  /** A substring of the name or of the token hint, case ignored, or the key's id. */
  text?: string
  state?: KeyState
  plan?: Plan
  /** States are judged at this instant. */
  now: number
  /** `id`: lowest first. `lastUsed`: last used first, never used last, then by id. */
  sort: KeySort
  /** The previous page's last key: this page starts after it in the order of `sort`. */
  after?: { id: number, lastUsedAt: number | null }
  limit: number
}

/** One UTC day's requests of every key added up. */
export interface DayTotals {
  /** Days since 1970-01-01, UTC. */
  day: number
  admitted: number
  refused: number
}

/** A key and its requests on one day. */
export interface KeyDayUsage {
  key: ApiKeyRecord
  admitted: number
  refused: number
}

/** How many keys have this plan and stand so. */
export interface KeyCount {
  state: KeyState
  plan: Plan
  count: number
}
