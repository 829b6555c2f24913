// Which token hashes exist, held in memory so that the gate asks the database
// only about a token that may be there (docs/INTERNALS.md, section "Key lookup").
import type { Storage } from '../../db/storage.js'
import { BloomFilter } from './bloom.js'
import { IdGaps } from './id-gaps.js'

/** Keys read per query, so that a full load never holds every row at once. */
const PAGE = 10_000
/** The false-positive rate of the filter once it holds as many keys as it was sized for. */
const FALSE_POSITIVE_RATE = 0.001
/** The filter is sized for this many times the keys there are when it is built, so that it is rebuilt rarely. */
const GROWTH = 2
/** The fewest keys a filter is sized for. */
const MIN_CAPACITY = 10_000

/** What one full load built, and the refreshes since have added to. */
interface IndexState {
  filter: BloomFilter
  /** Keys added to the filter. */
  count: number
  /** The highest id read. */
  highest: number
  gaps: IdGaps
}

/**
 * The token hashes of every key, as a Bloom filter kept in step with the
 * database by reading the ids above the highest read. Revoked keys stay in
 * it (a filter cannot forget): they only cost a lookup, which refuses them.
 */
export class TokenIndex {
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

  /** False only when no key had this hash at the last refresh; true until the first load has succeeded. */
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
    await this.#read(state, Math.min(state.highest, state.gaps.lowest() - 1))
  }

  /** Builds a new filter from every key, sized for their number; the old one answers until it is done. */
  async #load (): Promise<void> {
    const capacity = Math.max(MIN_CAPACITY, GROWTH * await this.#storage.countTokens())
    const state: IndexState = { filter: new BloomFilter(capacity, FALSE_POSITIVE_RATE), count: 0, highest: 0, gaps: new IdGaps() }
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
        if (id > state.highest || state.gaps.fill(id)) {
          state.filter.add(tokenHash)
          state.count++
        }
        // Between two ids read one after the other, an id above the highest
        // read before is a new gap; one below it was read, or is a gap already.
        state.gaps.skipped(Math.max(previous, state.highest), id, now)
        if (id > state.highest) state.highest = id
        previous = id
      }
      if (page.length < PAGE) break
    }
    state.gaps.prune(now, state.highest)
  }
}
