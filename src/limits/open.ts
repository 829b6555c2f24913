// Chooses the rate-limit store from REDIS_URL: in-process when unset, else
// Redis (one server or a cluster, redis-url.ts) with the in-process store as
// its fallback when Redis is unreachable. The Redis client is loaded only
// when REDIS_URL is set: an instance without it does not carry its memory.
import type { Degradation } from './degradation.js'
import { MemoryStore } from './memory-store.js'
import { parseRedisUrl } from './redis-url.js'
import { ResilientStore, type StoreLogger } from './resilient-store.js'
import type { RateLimitStore } from './store.js'

/**
 * How long start-up waits for Redis to connect: a reachable one is ready in
 * milliseconds, and one that is not is then reported unreachable at once,
 * rather than every instance starting degraded for the moment it takes to
 * connect.
 */
const CONNECT_WAIT_MS = 2000

/**
 * `namespace`: names this deployment's keys in a Redis that other
 * deployments may share (RedisStoreOptions). `local`: the store that limits
 * without Redis, and in its stead while it is unreachable; by default this
 * thread's own (workers pass the one they share, docs/WORKERS.md).
 * `degradation`: whether that store limits in its stead, by default this
 * thread's own (workers pass the instance's).
 */
export async function openRateLimitStore (
  redisUrl: string | undefined, logger: StoreLogger, namespace: string,
  local: RateLimitStore = new MemoryStore(), degradation?: Degradation
): Promise<RateLimitStore> {
  if (redisUrl === undefined) return local
  const { RedisStore } = await import('./redis-store.js')
  const redis = new RedisStore(parseRedisUrl(redisUrl), { namespace })
  await redis.whenReady(CONNECT_WAIT_MS)
  return await ResilientStore.open(redis, local, logger, degradation)
}
