// The storage's key lookup behind a short cache: the Lookup that identify
// (identify.ts) is given.
import { LRUCache } from 'lru-cache'
import type { Environment } from '../domain.js'
import type { Storage } from '../db/storage.js'
import { limitsFor } from '../limits/plans.js'
import type { Caller, Lookup } from './identify.js'

/** A revoked key is refused by every instance within this long. */
const CACHE_MS = 500
/** Lookups remembered at once; the least recently used go first. */
const CACHE_MAX = 10_000

export function createCachedLookup ({ storage, environment, now }: { storage: Storage, environment: Environment, now: () => number }): Lookup {
  // Unknown tokens are remembered too (as `caller: undefined`), so that
  // guessing costs no more lookups than using a real key.
  const cache = new LRUCache<string, { caller: Caller | undefined }>({
    max: CACHE_MAX,
    ttl: CACHE_MS,
    // The injected clock, read on every lookup: a revocation must show within CACHE_MS.
    perf: { now },
    ttlResolution: 0
  })

  return async (tokenHash) => {
    const hit = cache.get(tokenHash)
    if (hit !== undefined) return hit.caller
    const key = await storage.findApiKeyByTokenHash(tokenHash)
    const caller = key === undefined || key.revokedAt !== null || key.environment !== environment
      ? undefined
      : { key, limits: limitsFor(key.plan, key) }
    cache.set(tokenHash, { caller })
    return caller
  }
}
