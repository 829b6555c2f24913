// What each key used (docs/OPERATING.md: Usage): admitted and refused requests per key
// and UTC day, counted in memory and added to the database every USAGE_FLUSH_MS,
// with bounded memory whatever the number of keys or the length of an outage
// (docs/INTERNALS.md, section "Usage").
import { USAGE_FLUSH_MS } from '../config.js'
import type { ApiKeyRecord, KeyUsage, UsageStore } from '../db/storage.js'
import type { Plan } from '../domain.js'
import { DAY_MS } from '../instant.js'

/** Keys and days waiting to be written, at most. */
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

  async function write (): Promise<void> {
    if (pending.size === 0 && lastUsed.size === 0) return
    const batch = pending
    const used = lastUsed
    pending = new Map()
    lastUsed = new Map()
    // In one order on every instance, so that two writes never wait on each other's rows in a cycle.
    const rows = [...batch.values()].sort((a, b) => a.keyId - b.keyId || a.day - b.day)
    const touched = new Map([...used.entries()].sort((a, b) => a[0] - b[0]))
    try {
      await storage.addUsage(rows, touched)
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
