// Finding the key of a token hash, and knowing without asking the database
// that no key has it.
//
// The gate identifies a request before it counts it, so without an index
// every well-formed token sent from an address already over its limit
// would still cost a query: one address could take the connection pool
// away from everyone. A cap on lookups per address would not do, since a
// valid key must keep working from any address, however many clients share
// it behind one NAT. So every instance holds in memory an index of the
// token hashes that exist, and asks the database only for a token that may
// be there (docs/SECURITY.md).
//
// The index is a Bloom filter, not a Set of the hashes. At a million keys
// a Set of their 64-character hex hashes takes 96 MiB of heap on every
// instance; the filter, sized for twice the keys there are at 0.1 % false
// positives at that size, takes 3.5 MiB (and, at a million keys, answers
// yes for about one unknown token in a million). Measured with
// `npm run build && node --expose-gc scripts/key-index-memory.js`. A false
// positive only costs the lookup the gate made before this index existed,
// and its answer (no key) is cached like any other. Revoked keys stay in
// the filter (a filter cannot forget): they too only cost a lookup, which
// refuses them. Once the keys outnumber what the filter was sized for (each
// time their number doubles), a larger one is built from all of them,
// while the old one goes on answering and taking new keys.
//
// Written by hand rather than taken from npm: the input is already a
// SHA-256 (tokens.ts hashToken), so the filter is a bit array and the
// arithmetic below. The most used package, bloom-filters, would hash every
// item again (XXH64 in plain JavaScript) and brings eight dependencies
// (lodash, xxhashjs, reflect-metadata among them) for what is 40 lines here.
//
// Keeping in step: every REFRESH_MS each instance reads the keys with an id
// above the highest it has seen (the primary key's index, one short query),
// and any lookup that finds a key adds it at once. A token the filter lacks
// is only ever refused after a read begun after it arrived
// (`mayExistNow`), so a key works from every address the instant its
// creation is answered, wherever it was made. Those reads are shared by
// every request waiting, and begin at least CATCH_UP_MS apart: guessing
// costs an instance at most 1000 / CATCH_UP_MS short queries a second,
// however many guesses arrive (docs/RELIABILITY.md).
//
// PostgreSQL hands out ids when an INSERT starts, and INSERTs commit in any
// order: a refresh may see key 11 before key 10 commits. An id skipped in
// this way is a gap, and refreshes read again from the lowest gap until it
// is filled or GAP_MS has passed (an INSERT that rolled back leaves a gap
// for good). Gaps are looked for among the last GAP_WINDOW ids only.
//
// The cache of lookups runs on a monotonic clock: a wall clock stepped back
// would keep a revoked key alive. An entry is dated from when its query was
// sent, so an answer that took longer than CACHE_MS to come is used once
// and not kept.
import { hash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { LRUCache } from 'lru-cache'
import type { Environment } from '../domain.js'
import type { ApiKeyMatch, Storage } from '../db/storage.js'

/** A revoked key is refused by every instance within this long. */
const CACHE_MS = 500
/** Lookups remembered at once; the least recently used go first. */
const CACHE_MAX = 10_000
/** How often the index reads the keys made since its last read. */
const REFRESH_MS = 500
/** Reads begun for tokens the filter lacks start at least this far apart. */
const CATCH_UP_MS = 20
/** Keys read per query, so that a full load never holds every row at once. */
const PAGE = 10_000
/** The false-positive rate of the filter once it holds as many keys as it was sized for. */
const FALSE_POSITIVE_RATE = 0.001
/** The filter is sized for this many times the keys there are when it is built, so that it is rebuilt rarely. */
const GROWTH = 2
/** The fewest keys a filter is sized for. */
const MIN_CAPACITY = 10_000
/** How long a skipped id is read again for: far longer than a key's INSERT may run (5 s statement timeout). */
const GAP_MS = 30_000
/** Gaps are looked for among this many ids below the highest read. */
const GAP_WINDOW = 1000
const SHA256_HEX = /^[0-9a-f]{64}$/

export interface KeyLookupOptions {
  storage: Pick<Storage, 'findApiKeyByTokenHash' | 'listTokenHashes' | 'countTokens'>
  environment: Environment
  /**
   * Monotonic milliseconds, performance.now unless a test sets it. It must
   * never read 0: lru-cache takes an entry dated 0 for one that never expires.
   */
  clock?: () => number
  /** Told of each refresh that failed; the index keeps what it had, and the next refresh tries again. */
  onRefreshError?: (error: unknown) => void
}

export interface KeyLookup {
  /**
   * The unrevoked key of this environment whose current or previous token
   * has this hash; cached for CACHE_MS. Its expiry, and the end of a
   * previous token's overlap, are the caller's to check at each use.
   */
  find: (tokenHash: string) => Promise<ApiKeyMatch | undefined>
  /**
   * False only when certainly no key had this token hash at the last
   * refresh (at most about REFRESH_MS × 2 ago). True until the first load
   * has succeeded.
   */
  mayExist: (tokenHash: string) => boolean
  /**
   * As mayExist, but a token the filter lacks is asked about again after a
   * refresh begun after this call: false only when no key had it then.
   * When that refresh fails, the filter's answer stands.
   */
  mayExistNow: (tokenHash: string) => Promise<boolean>
  /** Reads the keys made since the last refresh (all of them the first time); one at a time. */
  refresh: () => Promise<void>
  /** Loads every key, then refreshes every REFRESH_MS until close. Resolves after the first load, failed or not. */
  start: () => Promise<void>
  close: () => void
}

export function createKeyLookup ({ storage, environment, clock = () => performance.now(), onRefreshError = () => {} }: KeyLookupOptions): KeyLookup {
  // Unknown tokens are remembered too (as `key: undefined`), so that
  // guessing costs no more lookups than using a real key.
  const cache = new LRUCache<string, { match: ApiKeyMatch | undefined }>({
    max: CACHE_MAX,
    ttl: CACHE_MS,
    // Read on every lookup: a revocation must show within CACHE_MS.
    perf: { now: clock },
    ttlResolution: 0
  })
  const index = new KeyIndex(storage, clock, onRefreshError)
  let timer: NodeJS.Timeout | undefined
  let closed = false

  async function find (tokenHash: string): Promise<ApiKeyMatch | undefined> {
    const hit = cache.get(tokenHash)
    if (hit !== undefined) return hit.match
    const sentAt = clock()
    const found = await storage.findApiKeyByTokenHash(tokenHash)
    const match = found === undefined || found.key.revokedAt !== null || found.key.environment !== environment ? undefined : found
    if (match !== undefined) index.add(tokenHash)
    // Dated from when the query was sent: the key was valid then, not
    // necessarily when the answer came.
    cache.set(tokenHash, { match }, { start: sentAt })
    return match
  }

  let running: Promise<void> | undefined
  let lastStarted = -Infinity
  function refresh (): Promise<void> {
    if (running === undefined) {
      lastStarted = clock()
      running = index.refresh().finally(() => { running = undefined })
    }
    return running
  }

  // Callers that arrive while a refresh runs wait for the next one, which
  // they all share: the one running may have begun before their key was made.
  let following: Promise<void> | undefined
  function refreshAfterNow (): Promise<void> {
    following ??= (async () => {
      await running?.catch(() => {})
      const wait = lastStarted + CATCH_UP_MS - clock()
      if (wait > 0) await sleep(wait)
      following = undefined
      await refresh().catch(onRefreshError)
    })()
    return following
  }

  async function tick (): Promise<void> {
    try {
      await refresh()
    } catch (error) {
      onRefreshError(error)
    }
  }

  function schedule (): void {
    if (closed) return
    // After each refresh ends, not on a fixed beat: a slow database never has two at once.
    timer = setTimeout(() => { tick().then(schedule, onRefreshError) }, REFRESH_MS)
    timer.unref()
  }

  return {
    find,
    mayExist: (tokenHash) => index.mayExist(tokenHash),
    async mayExistNow (tokenHash) {
      if (index.mayExist(tokenHash)) return true
      await refreshAfterNow()
      return index.mayExist(tokenHash)
    },
    refresh,
    async start () {
      await tick()
      schedule()
    },
    close () {
      closed = true
      clearTimeout(timer)
    }
  }
}

/** What one full load built, and the refreshes since have added to. */
interface IndexState {
  filter: BloomFilter
  /** Keys added to the filter. */
  count: number
  /** The highest id read. */
  highest: number
  /** Ids below `highest` not read yet, and when each was first missed. */
  gaps: Map<number, number>
}

/** The token hashes of every key, as a Bloom filter kept in step with the database. */
class KeyIndex {
  readonly #storage: Pick<Storage, 'listTokenHashes' | 'countTokens'>
  readonly #clock: () => number
  readonly #onError: (error: unknown) => void
  #state: IndexState | undefined
  /** A larger filter being read, once the keys outnumber what this one was sized for. */
  #rebuilding: Promise<void> | undefined

  constructor (storage: Pick<Storage, 'listTokenHashes' | 'countTokens'>, clock: () => number, onError: (error: unknown) => void) {
    this.#storage = storage
    this.#clock = clock
    this.#onError = onError
  }

  mayExist (tokenHash: string): boolean {
    return this.#state?.filter.has(tokenHash) ?? true
  }

  /** A key found by a lookup before a refresh brought it. */
  add (tokenHash: string): void {
    this.#state?.filter.add(tokenHash)
  }

  async refresh (): Promise<void> {
    const state = this.#state
    if (state === undefined) {
      await this.#load()
      return
    }
    // A full read takes seconds at a million keys: meanwhile the old
    // filter goes on answering, and taking the new keys, as before.
    if (state.count > state.filter.capacity) {
      this.#rebuilding ??= this.#load().catch(this.#onError).finally(() => { this.#rebuilding = undefined })
    }
    await this.#read(state, Math.min(state.highest, lowest(state.gaps.keys()) - 1))
  }

  /** Builds a new filter from every key, sized for their number; the old one answers until it is done. */
  async #load (): Promise<void> {
    const capacity = Math.max(MIN_CAPACITY, GROWTH * await this.#storage.countTokens())
    const state: IndexState = { filter: new BloomFilter(capacity, FALSE_POSITIVE_RATE), count: 0, highest: 0, gaps: new Map() }
    await this.#read(state, 0)
    this.#state = state
  }

  /** Adds every key with an id above `from` that the filter lacks, and notes the ids skipped. */
  async #read (state: IndexState, from: number): Promise<void> {
    const now = this.#clock()
    let previous = from
    for (;;) {
      const page = await this.#storage.listTokenHashes(previous, PAGE)
      for (const { id, tokenHash } of page) {
        if (id > state.highest || state.gaps.delete(id)) {
          state.filter.add(tokenHash)
          state.count++
        }
        // Between two ids read one after the other, an id above the highest
        // read before is a new gap; one below it was read, or is a gap already.
        for (let gap = Math.max(previous, state.highest, id - GAP_WINDOW - 1) + 1; gap < id; gap++) state.gaps.set(gap, now)
        if (id > state.highest) state.highest = id
        previous = id
      }
      if (page.length < PAGE) break
    }
    for (const [id, since] of state.gaps) {
      if (now - since > GAP_MS || id < state.highest - GAP_WINDOW) state.gaps.delete(id)
    }
  }
}

function lowest (ids: Iterable<number>): number {
  let min = Infinity
  for (const id of ids) if (id < min) min = id
  return min
}

/**
 * A Bloom filter over SHA-256 hex digests: its k bit positions come from
 * the digest's first 64 bits by enhanced double hashing (Dillinger and
 * Manolios), which needs no further hashing. Any other string is hashed
 * first, so that the filter never says no for an item it was given.
 * https://en.wikipedia.org/wiki/Double_hashing#Enhanced_double_hashing
 */
export class BloomFilter {
  readonly capacity: number
  readonly #bits: Uint32Array
  readonly #size: number
  readonly #hashes: number

  constructor (capacity: number, falsePositiveRate: number) {
    this.capacity = capacity
    // m = -n ln p / (ln 2)², k = (m / n) ln 2: https://en.wikipedia.org/wiki/Bloom_filter#Optimal_number_of_hash_functions
    const words = Math.ceil(-capacity * Math.log(falsePositiveRate) / Math.LN2 ** 2 / 32)
    this.#bits = new Uint32Array(words)
    this.#size = words * 32
    this.#hashes = Math.max(1, Math.round(this.#size / capacity * Math.LN2))
  }

  /** The filter's own memory, in bytes. */
  get bytes (): number {
    return this.#bits.byteLength
  }

  add (item: string): void {
    this.#each(item, (word, mask) => { this.#bits[word] = (this.#bits[word] as number) | mask })
  }

  has (item: string): boolean {
    let all = true
    this.#each(item, (word, mask) => { if (((this.#bits[word] as number) & mask) === 0) all = false })
    return all
  }

  #each (item: string, visit: (word: number, mask: number) => void): void {
    const digest = SHA256_HEX.test(item) ? item : hash('sha256', item)
    // Below 2^32 each, so every sum below stays an exact integer.
    let a = Number.parseInt(digest.slice(0, 8), 16) % this.#size
    let b = Number.parseInt(digest.slice(8, 16), 16) % this.#size
    for (let i = 0; i < this.#hashes; i++) {
      visit(a >>> 5, 1 << (a & 31))
      a = (a + b) % this.#size
      b = (b + i + 1) % this.#size
    }
  }
}
