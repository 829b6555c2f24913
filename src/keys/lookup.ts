// Finding the key of a token hash, and knowing without asking the database
// that no key has it, so that guessed tokens cannot take the connection pool
// (docs/INTERNALS.md, section "Key lookup"). The parts are in lookup/.
import { performance } from 'node:perf_hooks'
import type { Environment } from '../domain.js'
import type { ApiKeyMatch, Storage } from '../db/storage.js'
import { createCachedFind } from './lookup/cache.js'
import { createRefresher } from './lookup/refresher.js'
import { TokenIndex } from './lookup/token-index.js'

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
   * has this hash; cached for CACHE_MS (lookup/cache.ts). Its expiry, and
   * the end of a previous token's overlap, are the caller's to check at each use.
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
   * refresh begun after this call: false only when no key had it then, so a
   * key works everywhere the instant its creation is answered.
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
  const index = new TokenIndex(storage, clock, onRefreshError)
  const refresher = createRefresher(index, clock, onRefreshError)
  // A key a lookup found goes into the index at once, before a refresh brings it.
  const find = createCachedFind({ storage, environment, clock, onFound: (tokenHash) => { index.add(tokenHash) } })

  return {
    find,
    mayExist: (tokenHash) => index.mayExist(tokenHash),
    async mayExistNow (tokenHash) {
      if (index.mayExist(tokenHash)) return true
      await refresher.refreshAfterNow()
      return index.mayExist(tokenHash)
    },
    refresh: refresher.refresh,
    start: refresher.start,
    close: refresher.close
  }
}
