// What each key used (docs/OPERATING.md: Usage): admitted and refused requests per key
// and UTC day, and calls of deprecated operations per key, operation and UTC day
// (docs/OPERATING.md: The deprecated operation's callers), counted in memory and
// added to the database every USAGE_FLUSH_MS,
// with bounded memory whatever the number of keys or the length of an outage
// (docs/INTERNALS.md, section "Usage").
import type { ApiKeyRecord, DeprecatedCalls, KeyUsage, UsageStore } from '../db/storage.js'
import type { Plan } from '../domain.js'
import { DAY_MS } from '../instant.js'

/**
 * How often usage counts are written, at most (docs/OPERATING.md: Usage): at
 * most this much is lost to a `kill -9`. USAGE_FLUSH_MS may only lower it (config.ts).
 */
export const USAGE_FLUSH_MS = 10_000

/** Keys and days waiting to be written, at most; and as many keys, operations and days of deprecated calls. */
export const MAX_USAGE_ENTRIES = 100_000

type UsageOutcome = 'admitted' | 'refused'

export interface UsageCounterOptions {
  storage: Pick<UsageStore, 'addUsage'>
  /** Unix milliseconds; injected so that tests control the day. */
  now: () => number
  /** How often to write; tests shorten it. */
  flushMs?: number
  /** Told of a write that failed (its counts are kept for the next). */
  onError?: (error: unknown) => void
  /** Told, at the end of a write, how many counts were dropped since the one before. */
  onDropped?: (count: number) => void
  /** Told of each request counted, by the key's plan: for metrics. */
  onCounted?: (plan: Plan, outcome: UsageOutcome) => void
}

export interface UsageCounter {
  /** Counts one request of a key, now. */
  count: (key: Pick<ApiKeyRecord, 'id' | 'plan'>, outcome: UsageOutcome) => void
  /** Counts one call of a deprecated operation by a key, now. */
  countDeprecated: (keyId: number, operation: string) => void
  /** Writes what is counted; resolves once written (or failed, and kept). */
  flush: () => Promise<void>
  /** Starts writing every `flushMs`. */
  start: () => void
  /** Stops the timer and writes what is left. */
  close: () => Promise<void>
}

export function createUsageCounter ({ storage, now: clock, flushMs = USAGE_FLUSH_MS, onError = () => {}, onDropped = () => {}, onCounted }: UsageCounterOptions): UsageCounter {
  /** Keyed `keyId:day`. */
  let pending = new Map<string, KeyUsage>()
  let lastUsed = new Map<number, number>()
  /** Keyed `keyId:day:operation`. */
  let deprecated = new Map<string, DeprecatedCalls>()
  let writing: Promise<void> | undefined
  /** Counts dropped since the last write; told once per write, so that an outage cannot flood the log with a line per request. */
  let dropped = 0
  let timer: NodeJS.Timeout | undefined

  function count ({ id: keyId, plan }: Pick<ApiKeyRecord, 'id' | 'plan'>, outcome: UsageOutcome): void {
    onCounted?.(plan, outcome)
    const now = clock()
    const day = Math.floor(now / DAY_MS)
    const entry = `${keyId}:${day}`
    let usage = pending.get(entry)
    if (usage === undefined) {
      if (pending.size >= MAX_USAGE_ENTRIES) {
        // With no write under way, one starts and takes what waits; during one, the database is slow or away, and this count is lost.
        if (writing === undefined) flush().catch(onError)
        if (pending.size >= MAX_USAGE_ENTRIES) {
          dropped++
          return
        }
      }
      usage = { keyId, day, admitted: 0, refused: 0 }
      pending.set(entry, usage)
    }
    if (outcome === 'admitted') {
      usage.admitted++
      if ((lastUsed.get(keyId) ?? 0) < now) lastUsed.set(keyId, now)
    } else {
      usage.refused++
    }
  }

  function countDeprecated (keyId: number, operation: string): void {
    const now = clock()
    const day = Math.floor(now / DAY_MS)
    const entry = `${keyId}:${day}:${operation}`
    let calls = deprecated.get(entry)
    if (calls === undefined) {
      // Bounded as the usage counts are; these entries are few (one per key that calls a deprecated operation).
      if (deprecated.size >= MAX_USAGE_ENTRIES) {
        dropped++
        return
      }
      calls = { keyId, operation, day, calls: 0, lastCall: now }
      deprecated.set(entry, calls)
    }
    calls.calls++
    if (calls.lastCall < now) calls.lastCall = now
  }

  async function write (): Promise<void> {
    if (pending.size === 0 && lastUsed.size === 0 && deprecated.size === 0) return
    const batch = pending
    const used = lastUsed
    const called = deprecated
    pending = new Map()
    lastUsed = new Map()
    deprecated = new Map()
    // In one order on every instance, so that two writes never wait on each other's rows in a cycle.
    const rows = [...batch.values()].sort((a, b) => a.keyId - b.keyId || a.day - b.day)
    const touched = new Map([...used.entries()].sort((a, b) => a[0] - b[0]))
    const calls = [...called.values()].sort((a, b) => a.keyId - b.keyId || a.day - b.day || (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0))
    try {
      await storage.addUsage(rows, touched, calls)
    } catch (error) {
      onError(error)
      // Kept for the next write, added to what was counted meanwhile.
      for (const [entry, usage] of batch) {
        const now = pending.get(entry)
        if (now !== undefined) {
          now.admitted += usage.admitted
          now.refused += usage.refused
        } else if (pending.size < MAX_USAGE_ENTRIES) {
          pending.set(entry, usage)
        } else {
          dropped += usage.admitted + usage.refused
        }
      }
      for (const [keyId, at] of used) if ((lastUsed.get(keyId) ?? 0) < at) lastUsed.set(keyId, at)
      for (const [entry, kept] of called) {
        const now = deprecated.get(entry)
        if (now !== undefined) {
          now.calls += kept.calls
          now.lastCall = Math.max(now.lastCall, kept.lastCall)
        } else if (deprecated.size < MAX_USAGE_ENTRIES) {
          deprecated.set(entry, kept)
        } else {
          dropped += kept.calls
        }
      }
    }
    if (dropped > 0) {
      onDropped(dropped)
      dropped = 0
    }
  }

  /**
   * One write at a time; a flush asked for during one waits for it, then
   * writes what came since. With none under way, the counts are taken at
   * once, so that a count past the bound finds room.
   */
  function flush (): Promise<void> {
    const run = writing === undefined ? write() : writing.then(write)
    const tracked: Promise<void> = run.finally(() => { if (writing === tracked) writing = undefined })
    writing = tracked
    return run
  }

  return {
    count,
    countDeprecated,
    flush,
    start () {
      timer = setInterval(() => { flush().catch(onError) }, flushMs)
      timer.unref()
    },
    async close () {
      clearInterval(timer)
      await flush()
    }
  }
}
