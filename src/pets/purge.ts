// Idempotency records are read for 24 hours only (docs/API.md: Safe
// retries); forgetting the older ones every hour keeps the
// table at about a day of writes.
import type { PetStore } from '../db/storage.js'
import { IDEMPOTENCY_WINDOW_MS } from './service.js'

const PURGE_EVERY_MS = 60 * 60 * 1000

interface PurgeLog {
  info: (fields: object, message: string) => void
  warn: (fields: object, message: string) => void
}

/** Starts the hourly purge; the function returned stops it. */
export function purgeExpiredIdempotencyKeys (storage: Pick<PetStore, 'purgeIdempotentRequests'>, now: () => number, log: PurgeLog): () => void {
  const timer = setInterval(() => {
    storage.purgeIdempotentRequests(now() - IDEMPOTENCY_WINDOW_MS)
      .then((count) => { if (count > 0) log.info({ count }, 'forgot expired idempotency keys') })
      .catch((error: unknown) => log.warn({ err: error }, 'could not forget expired idempotency keys'))
  }, PURGE_EVERY_MS)
  // The purge alone never keeps the process running.
  timer.unref()
  return () => clearInterval(timer)
}
