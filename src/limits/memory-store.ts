// The in-process store: exact for one process, and the fallback when Redis
// is unreachable. The rule is rule.ts's (why by hand: docs/INTERNALS.md,
// section "The rule"); keeping the subjects is lru-cache's job.
import { LRUCache } from 'lru-cache'
import { countsUntil, decide, F_BANNED_UNTIL, RULE_FIELDS } from './rule.js'
import { windowStart, type Decision, type HitRequest, type RateLimitStore, type StoreHealth } from './store.js'

/** The state of a subject the store does not keep, for a look at it: decide() writes nothing on a look, so it stays all zero. */
const NOT_KEPT = new Float64Array(RULE_FIELDS)

/** How often subjects that no longer count are let go of while the store is not full. */
const PURGE_EVERY_MS = 60_000

/**
 * Subjects kept at most: with TRUST_PROXY on a client can name a new address
 * with every request. About 48 MB; only a flood of made-up subjects reaches
 * it (docs/INTERNALS.md, section "In-process store").
 */
const DEFAULT_MAX_SUBJECTS = 100_000

export interface MemoryStoreOptions {
  /** See DEFAULT_MAX_SUBJECTS. */
  maxSubjects?: number
}

export class MemoryStore implements RateLimitStore {
  readonly name = 'memory'
  /**
   * At most `maxSubjects`, least recently used first; each lives until its
   * last window or ban ends (its `ttl`, on the store's clock). hit() reads
   * every count against its window's start, so one kept late counts for nothing.
   */
  readonly #subjects: LRUCache<string, Float64Array>
  /** Start of the UTC minute of the last purge made to find room: no window ends between two minute boundaries. */
  #purgedMinute = Number.NaN
  /**
   * When each banned subject's ban ends, by the ban's length, so that each
   * inner map is in the order the bans end (a subject banned again moves to
   * its end): a ban, unlike a window, ends within a minute, and the subject
   * may then no longer count. Read from the front, only ended bans are read.
   */
  readonly #banEnds = new Map<number, Map<string, number>>()
  readonly #purger: NodeJS.Timeout

  constructor (readonly clock: () => number = Date.now, { maxSubjects = DEFAULT_MAX_SUBJECTS }: MemoryStoreOptions = {}) {
    if (!Number.isSafeInteger(maxSubjects) || maxSubjects < 1) {
      throw new RangeError(`maxSubjects must be a positive integer, not ${maxSubjects}`)
    }
    this.#subjects = new LRUCache({
      max: maxSubjects,
      // The ttls are counted on the clock that `now` comes from, read every
      // time: lru-cache's default is performance.now(), cached for 1 ms.
      perf: { now: clock },
      ttlResolution: 0
    })
    this.#purger = setInterval(() => {
      this.#subjects.purgeStale()
      this.#dropEndedBans(clock())
    }, PURGE_EVERY_MS)
    this.#purger.unref()
  }

  async hit (request: HitRequest, now: number): Promise<Decision> {
    const { subject, ban } = request
    // Only looking: the subject is not made more recently used either.
    if (request.charge === false) return decide(this.#subjects.peek(subject) ?? NOT_KEPT, 0, request, now)

    let state = this.#subjects.get(subject)
    if (state === undefined) {
      this.#makeRoom(now)
      state = new Float64Array(RULE_FIELDS)
    }
    const decision = decide(state, 0, request, now)
    if (decision.outcome === 'limited' && decision.banEarnedUntil !== undefined && ban !== undefined) this.#noteBan(subject, ban.seconds, decision.banEarnedUntil)
    // Every hit makes the subject the most recently used, and sets how long it
    // still counts. lru-cache keeps an entry while `clock - start <= ttl`:
    // started 1 ms early, it is stale from the instant the subject stops
    // counting, as the shared-memory store reads it, so that room is made
    // there first (docs/INTERNALS.md, section "In-process store").
    this.#subjects.set(subject, state, { ttl: countsUntil(state, 0, now) - now, start: now - 1 })
    return decision
  }

  /**
   * Makes room for one more subject when the store is full: first those that
   * no longer count, then the least recently seen that is not banned (evicting
   * a ban would let a client lift it by flooding), the oldest ban only when all
   * are banned. Why: docs/INTERNALS.md, section "In-process store".
   */
  #makeRoom (now: number): void {
    const subjects = this.#subjects
    if (subjects.size < subjects.max) return
    this.#dropEndedBans(now)
    if (windowStart('minute', now) !== this.#purgedMinute) {
      this.#purgedMinute = windowStart('minute', now)
      subjects.purgeStale()
    }
    let bannedToSkip = subjects.size
    while (subjects.size >= subjects.max && bannedToSkip > 0) {
      const oldest = subjects.rkeys().next().value
      if (oldest === undefined) return
      if ((subjects.peek(oldest)?.[F_BANNED_UNTIL] ?? 0) > now) {
        // lru-cache would evict it, banned or not: made the most recently used, it is stepped over until the others have been.
        subjects.get(oldest)
        bannedToSkip--
      } else {
        subjects.delete(oldest)
      }
    }
    // Every subject is banned: the set() that follows evicts the least recently used, the oldest ban.
  }

  #noteBan (subject: string, seconds: number, bannedUntil: number): void {
    let ends = this.#banEnds.get(seconds)
    if (ends === undefined) this.#banEnds.set(seconds, ends = new Map())
    ends.delete(subject)
    ends.set(subject, bannedUntil)
  }

  /** Forgets each subject whose ban has ended and that no longer counts otherwise (lru-cache reads it as past its ttl once the clock is beyond its end). */
  #dropEndedBans (now: number): void {
    for (const ends of this.#banEnds.values()) {
      for (const [subject, bannedUntil] of ends) {
        if (bannedUntil > now) break
        ends.delete(subject)
        if (!this.#subjects.has(subject)) this.#subjects.delete(subject)
      }
    }
  }

  /** Nothing outside the process to lose: always ok, even when full, since it then forgets the oldest subjects and goes on limiting. */
  async health (): Promise<StoreHealth> {
    return { status: 'ok' }
  }

  async close (): Promise<void> {
    clearInterval(this.#purger)
  }
}
