// The in-process store: exact for one process, and the fallback when Redis
// is unreachable. Hand-written because rate-limiter-flexible charges a
// refused request and checks each window separately, while the contract here
// is "both windows or neither".
import {
  WINDOW_MS, windowStart,
  type Decision, type HitRequest, type RateLimitStore, type WindowName, type WindowState
} from './store.js'

interface Counter { start: number, count: number }

interface SubjectState {
  windows: Partial<Record<WindowName, Counter>>
  refusals: Counter
  bannedUntil: number
}

const SWEEP_EVERY_MS = 60_000

export class MemoryStore implements RateLimitStore {
  readonly name = 'memory'
  readonly #subjects = new Map<string, SubjectState>()
  readonly #sweeper: NodeJS.Timeout

  constructor (readonly clock: () => number = Date.now) {
    this.#sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_EVERY_MS)
    this.#sweeper.unref()
  }

  async hit ({ subject, windows, ban }: HitRequest, now: number): Promise<Decision> {
    let state = this.#subjects.get(subject)
    if (state === undefined) {
      state = { windows: {}, refusals: { start: 0, count: 0 }, bannedUntil: 0 }
      this.#subjects.set(subject, state)
    }

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
      if (ban !== undefined) {
        const minute = windowStart('minute', now)
        state.refusals = state.refusals.start === minute
          ? { start: minute, count: state.refusals.count + 1 }
          : { start: minute, count: 1 }
        if (state.refusals.count >= ban.threshold) {
          state.bannedUntil = now + ban.seconds * 1000
          // A new ban needs as many new refusals: one right after this ban ends does not renew it.
          state.refusals = { start: minute, count: 0 }
        }
      }
      return { outcome: 'limited', windows: view(0) }
    }

    for (const { window, used, start } of current) state.windows[window] = { start, count: used + 1 }
    return { outcome: 'allowed', windows: view(1) }
  }

  /** Forgets subjects whose windows have all ended and that are not banned. */
  sweep (now: number): void {
    for (const [subject, state] of this.#subjects) {
      const live = Object.entries(state.windows).some(([window, counter]) =>
        counter.start + WINDOW_MS[window as WindowName] > now)
      if (!live && state.bannedUntil <= now) this.#subjects.delete(subject)
    }
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }
}
