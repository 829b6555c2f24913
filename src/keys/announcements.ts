// The events that come from time and use rather than from an operator's
// change (docs/WEBHOOKS.md: Quota and expiry): a key's daily quota at 80 %
// and at 100 %, and its expiry a week ahead and when it comes. Each is
// announced once, across every instance, by the row written with its event
// (KeyAnnouncement): instances that see the same moment write one event.
import { LRUCache } from 'lru-cache'
import type { KeyAnnouncement, KeyStore, LeakStore, WebhookStore } from '../db/storage.js'
import type { EventType } from '../domain.js'
import { DAY_MS } from '../instant.js'
import type { QuotaLevel } from '../limits/limit.js'
import { viewAll } from './manage.js'

/** How long before its expiry a key is announced as expiring. */
const EXPIRING_AHEAD_MS = 7 * DAY_MS
/**
 * How far back an expiry is still announced: a look that was not made for
 * a while (the service stopped) catches up, and a key that expired long
 * before these events existed is not announced years late.
 */
const EXPIRED_LOOKBACK_MS = 7 * DAY_MS
/** Keys announced per statement of a look. */
const BATCH = 100

type Announcing = KeyStore & LeakStore & WebhookStore

const QUOTA_TYPES: Record<QuotaLevel, EventType> = { warning: 'quota.warning', exhausted: 'quota.exhausted' }

/** What the limiter saw: a key's day window at or past a level, and how far it is used. */
export interface QuotaReached {
  keyId: number
  level: QuotaLevel
  limit: number
  used: number
  /** When the request was counted, Unix milliseconds: its UTC day is the window's. */
  at: number
}

/** Announcements remembered by one process, so that the requests after a crossing write nothing. */
const REMEMBERED = 100_000

/**
 * Announces quota levels reached, off the request's path: the returned
 * function writes nothing for a level this process announced (or found
 * announced) today, and never throws; a failed write is given to `onError`
 * and tried by the next request that sees the level.
 */
export function createQuotaAnnouncer (storage: Announcing, onError: (error: unknown) => void): (reached: QuotaReached) => void {
  const done = new LRUCache<string, true>({ max: REMEMBERED })
  const writing = new Set<string>()
  return (reached) => {
    const day = Math.floor(reached.at / DAY_MS)
    const once: KeyAnnouncement = { keyId: reached.keyId, type: QUOTA_TYPES[reached.level], at: day }
    const name = `${once.keyId} ${once.type} ${day}`
    if (done.has(name) || writing.has(name)) return
    writing.add(name)
    announceQuota(storage, once, reached)
      .then(() => { done.set(name, true) }, onError)
      .finally(() => { writing.delete(name) })
  }
}

async function announceQuota (storage: Announcing, once: KeyAnnouncement, reached: QuotaReached): Promise<void> {
  const record = await storage.getApiKey(reached.keyId)
  if (record === undefined) return
  const [key] = await viewAll(storage, [record], reached.at)
  const data = { key, day: new Date(once.at * DAY_MS).toISOString().slice(0, 10), limit: reached.limit, used: reached.used }
  await storage.announceOnce(once, { type: once.type, createdAt: reached.at, data: JSON.stringify(data) })
}

/**
 * One look for expiries to announce: `key.expiring` for live keys that
 * expire within EXPIRING_AHEAD_MS, `key.expired` for those whose expiry
 * passed within EXPIRED_LOOKBACK_MS; each once per key and expiry, so a
 * key given another expiry is announced again. Says how many it announced.
 */
export async function announceExpiries (storage: Announcing, now: number): Promise<number> {
  return await announceEach(storage, 'key.expiring', now, now + EXPIRING_AHEAD_MS, now) +
    await announceEach(storage, 'key.expired', now - EXPIRED_LOOKBACK_MS, now, now)
}

async function announceEach (storage: Announcing, type: EventType, after: number, until: number, now: number): Promise<number> {
  let announced = 0
  for (;;) {
    const records = await storage.keysToAnnounce(type, after, until, BATCH)
    const views = await viewAll(storage, records, now)
    let written = 0
    for (const [i, record] of records.entries()) {
      if (record.expiresAt === null) continue
      const event = { type, createdAt: now, data: JSON.stringify(views[i]) }
      if (await storage.announceOnce({ keyId: record.id, type, at: record.expiresAt }, event)) written++
    }
    announced += written
    // Each key announced, here or by another instance, leaves the look; a batch another instance took whole ends it.
    if (records.length < BATCH || written === 0) return announced
  }
}
