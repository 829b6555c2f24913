// Lookups of a token hash, remembered for CACHE_MS on a monotonic clock: a
// wall clock stepped back would keep a revoked key alive.
import { LRUCache } from 'lru-cache'
import type { Environment } from '../../domain.js'
import type { ApiKeyMatch, Storage } from '../../db/storage.js'

/** A revoked key is refused by every instance within this long. */
const CACHE_MS = 500
/** Lookups remembered at once; the least recently used go first. */
const CACHE_MAX = 10_000

export interface CachedFindOptions {
  storage: Pick<Storage, 'findApiKeyByTokenHash'>
  environment: Environment
  /** Monotonic milliseconds that never read 0: lru-cache takes an entry dated 0 for one that never expires. */
  clock: () => number
  /** Told of each key a query found. */
  onFound: (tokenHash: string) => void
}

/** The unrevoked key of `environment` whose current or previous token has this hash, cached for CACHE_MS. */
export function createCachedFind ({ storage, environment, clock, onFound }: CachedFindOptions): (tokenHash: string) => Promise<ApiKeyMatch | undefined> {
  // Unknown tokens are remembered too (as `match: undefined`), so that
  // guessing costs no more lookups than using a real key.
  const cache = new LRUCache<string, { match: ApiKeyMatch | undefined }>({
    max: CACHE_MAX,
    ttl: CACHE_MS,
    // Read on every lookup: a revocation must show within CACHE_MS.
    perf: { now: clock },
    ttlResolution: 0
  })

  return async function find (tokenHash) {
    const hit = cache.get(tokenHash)
    if (hit !== undefined) return hit.match
    const sentAt = clock()
    const found = await storage.findApiKeyByTokenHash(tokenHash)
    const match = found === undefined || found.key.revokedAt !== null || found.key.environment !== environment ? undefined : found
    if (match !== undefined) onFound(tokenHash)
    // Dated from when the query was sent: the key was valid then, not
    // necessarily when the answer came, so a slow answer is used once and not kept.
    cache.set(tokenHash, { match }, { start: sentAt })
    return match
  }
}
