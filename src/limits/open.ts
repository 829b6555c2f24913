// Chooses the rate-limit store from REDIS_URL.
import { ConfigError } from '../config.js'
import { MemoryStore } from './memory-store.js'
import type { RateLimitStore } from './store.js'

export async function openRateLimitStore (redisUrl: string | undefined): Promise<RateLimitStore> {
  if (redisUrl === undefined) return new MemoryStore()
  throw new ConfigError('REDIS_URL: Redis is not supported by this build yet; unset it to limit in-process')
}
