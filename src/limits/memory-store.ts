// The in-process store: exact for one process, and the fallback when Redis
// is unreachable. Hand-written because rate-limiter-flexible charges a
// refused request and checks each window separately, while the contract here
// is "both windows or neither".
import {
  WINDOW_MS, windowStart,
  type Decision, type HitRequest, type RateLimitStore, type StoreHealth, type WindowName, type WindowState
} from './store.js'

interface Counter { start: number, count: number }

interface SubjectState {
  windows: Partial<Record<WindowName, Counter>>
  refusals: Counter
  bannedUntil: number
}

const SWEEP_EVERY_MS = 60_000

/**
 * Subjects kept at most. With TRUST_PROXY on, a client can name a new address
 * with every request, so without a cap memory would grow with its sending
 * rate until the next sweep. 100,000 subjects take 35 to 40 MB of heap
 * (measured on Node 20: about 400 bytes each, IPv6 subjects the largest), a
 * bound any host can afford. An address is forgotten a minute or two after
 * its last request (keys, kept for their day window, are only as many as
 * the database holds), so reaching the cap takes 100,000 distinct clients in
 * about a minute: far more than one instance serves, so ordinary traffic
 * stays below it and only a flood of made-up subjects reaches it.
 */
const DEFAULT_MAX_SUBJECTS = 100_000

export interface MemoryStoreOptions {
  /** See DEFAULT_MAX_SUBJECTS. */
  maxSubjects?: number
}

export class MemoryStore implements RateLimitStore {
  readonly name = 'memory'
  /** In least-recently-used order: a Map iterates in insertion order, and every hit re-inserts its subject. */
  readonly #subjects = new Map<string, SubjectState>()
  readonly #maxSubjects: number
  /** Start of the UTC minute of the last sweep: no window ends between two minute boundaries. */
  #sweptMinute = Number.NaN
  readonly #sweeper: NodeJS.Timeout

  constructor (readonly clock: () => number = Date.now, { maxSubjects = DEFAULT_MAX_SUBJECTS }: MemoryStoreOptions = {}) {
    if (!Number.isSafeInteger(maxSubjects) || maxSubjects < 1) {
      throw new RangeError(`maxSubjects must be a positive integer, not ${maxSubjects}`)
    }
    this.#maxSubjects = maxSubjects
    this.#sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_EVERY_MS)
    this.#sweeper.unref()
  }

  /** How many subjects the store holds now. */
  get size (): number {
    return this.#subjects.size
  }

  async hit ({ subject, windows, ban }: HitRequest, now: number): Promise<Decision> {
    let state = this.#subjects.get(subject)
    if (state === undefined) {
      this.#makeRoom(now)
      state = { windows: {}, refusals: { start: 0, count: 0 }, bannedUntil: 0 }
    } else {
      this.#subjects.delete(subject)
    }
    this.#subjects.set(subject, state)

    const current = windows.map(({ window, limit }) => {
      const start = windowStart(window, now)
      const counter = state.windows[window]
      const used = counter !== undefined && counter.start === start ? counter.count : 0
      return { window, limit, used, start }
    })
    const view = (charge: number): WindowState[] => current.map(({ window, limit, used, start }) => ({
      window, limit, remaining: Math.max(0, limit - used - charge), resetAt: start + WINDOW_MS[window]
    }))

    if (state.bannedUntil > now) return { outcome: 'banned', windows: view(0), bannedUntil: state.bannedUntil }

    if (current.some(({ limit, used }) => used >= limit)) {
      let banEarnedUntil: number | undefined
      if (ban !== undefined) {
        const minute = windowStart('minute', now)
        state.refusals = state.refusals.start === minute
          ? { start: minute, count: state.refusals.count + 1 }
          : { start: minute, count: 1 }
        if (state.refusals.count >= ban.threshold) {
          state.bannedUntil = now + ban.seconds * 1000
          banEarnedUntil = state.bannedUntil
          // A new ban needs as many new refusals: one right after this ban ends does not renew it.
          state.refusals = { start: minute, count: 0 }
        }
      }
      return banEarnedUntil === undefined ? { outcome: 'limited', windows: view(0) } : { outcome: 'limited', windows: view(0), banEarnedUntil }
    }

    for (const { window, used, start } of current) state.windows[window] = { start, count: used + 1 }
    return { outcome: 'allowed', windows: view(1) }
  }

  /**
   * Makes room for one more subject when the store is full. Forgetting a
   * subject that still counts is a trade: its windows start again from zero
   * and its refusals towards a ban are lost. So, first, the subjects that no
   * longer count go (a sweep, at most once a UTC minute, since only a minute
   * boundary or a ban's end makes more of them). Then the least recently
   * seen subject that is not banned goes: evicting a ban would let a banned
   * client lift it by flooding. What is left to lose is the counts of a
   * subject seen before `maxSubjects` others that all still count. A client
   * can reset its own counts that way only by sending that many requests
   * under other subjects, each of them counted, while it sends nothing under
   * its own: it gains no more than an instance restart would give it, since
   * a restart empties this store too. Only when every subject is banned does
   * the oldest ban go, so that memory stays bounded however many are banned.
   */
  #makeRoom (now: number): void {
    if (this.#subjects.size < this.#maxSubjects) return
    if (windowStart('minute', now) !== this.#sweptMinute) this.sweep(now)
    let bannedToSkip = this.#subjects.size
    while (this.#subjects.size >= this.#maxSubjects) {
      const oldest = this.#subjects.entries().next().value
      if (oldest === undefined) return
      const [subject, state] = oldest
      this.#subjects.delete(subject)
      // Re-inserted at the recent end, a banned subject is not looked at again until the others have been.
      if (state.bannedUntil > now && bannedToSkip-- > 0) this.#subjects.set(subject, state)
    }
  }

  /** Forgets subjects whose windows have all ended and that are not banned. */
  sweep (now: number): void {
    this.#sweptMinute = windowStart('minute', now)
    for (const [subject, state] of this.#subjects) {
      const live = Object.entries(state.windows).some(([window, counter]) =>
        counter.start + WINDOW_MS[window as WindowName] > now)
      if (!live && state.bannedUntil <= now) this.#subjects.delete(subject)
    }
  }

  /** Nothing outside the process to lose: always ok, even when full, since it then forgets the oldest subjects and goes on limiting. */
  async health (): Promise<StoreHealth> {
    return { status: 'ok' }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }
}
