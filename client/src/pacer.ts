// With `pace: true`, the client spaces its own requests so that none meets a
// 429: the requests the service says are left in the current window are
// spread over the time left in it, and none is sent once none is left. No
// maintained library paces by a server's X-RateLimit-* headers (token
// buckets such as bottleneck's are set up from numbers known in advance),
// so this is written here.
import { RateLimitedError } from './errors.js'
import { sleep, timeoutError } from './timers.js'

export interface RateLimit {
  /** Requests allowed in the window with the fewest requests left. */
  limit: number
  /** Requests left in that window. */
  remaining: number
  /** When that window resets (while the key is banned: when the ban ends). */
  resetAt: Date
}

/**
 * X-RateLimit-Reset is in whole seconds and read with this machine's clock:
 * a window is taken to reset this much later, so that a clock a little
 * ahead of the service's does not send into the old window.
 */
const RESET_MARGIN_MS = 1_000

export class Pacer {
  /** When the window the last response described is taken to reset. */
  #resetAt: number | undefined
  /** Requests that may still be sent in that window, less those sent since. */
  #left = 0
  #inFlight = 0
  #lastSent: number | undefined
  /** Callers wait their turn in order. */
  #queue: Promise<unknown> = Promise.resolve()
  #wake: { promise: Promise<void>, resolve: () => void } | undefined
  readonly #timeoutMs: number

  constructor (timeoutMs: number) {
    this.#timeoutMs = timeoutMs
  }

  /**
   * Waits until a request may be sent without meeting the limit, and counts
   * it as sent. Resolves with the function to call once its response (or
   * its failure) is in. Throws a RateLimitedError, without waiting, when
   * the wait would pass `deadline`.
   */
  async acquire (deadline: number): Promise<() => void> {
    const turn = this.#queue.then(async () => await this.#waitForTurn(deadline))
    this.#queue = turn.catch(() => undefined)
    await turn
    return () => {
      this.#inFlight--
      this.#notify()
    }
  }

  /** A response's X-RateLimit-* headers, read while its request still counts as in flight. */
  update (window: RateLimit): void {
    this.#resetAt = window.resetAt.getTime() + RESET_MARGIN_MS
    this.#left = window.remaining - (this.#inFlight - 1)
    this.#notify()
  }

  async #waitForTurn (deadline: number): Promise<void> {
    for (;;) {
      const now = Date.now()
      const at = this.#sendAt(now)
      if (at !== undefined && at <= now) {
        this.#left--
        this.#inFlight++
        this.#lastSent = now
        return
      }
      if (at !== undefined && at > deadline) {
        throw new RateLimitedError({
          code: 'rate_limited',
          status: 429,
          message: `Not sent: the rate limit leaves no room for this request before ${new Date(at).toISOString()}, past the call's time budget.`,
          retryAt: new Date(at)
        })
      }
      if (at === undefined && now >= deadline) throw timeoutError(this.#timeoutMs)
      await sleep((at ?? deadline) - now, this.#nextChange())
    }
  }

  /** When the next request may go; undefined: once a response in flight has told what is left. */
  #sendAt (now: number): number | undefined {
    const reset = this.#resetAt
    if (reset === undefined || now >= reset) {
      // What is left is unknown (nothing answered yet, or the window has
      // reset): one request at a time until a response says.
      return this.#inFlight === 0 ? now : undefined
    }
    if (this.#left <= 0) return reset
    if (this.#lastSent === undefined) return now
    // The requests left, evenly over the time left.
    return this.#lastSent + (reset - this.#lastSent) / (this.#left + 1)
  }

  #nextChange (): Promise<void> {
    if (this.#wake === undefined) {
      let wake = (): void => {}
      const promise = new Promise<void>((resolve) => { wake = resolve })
      this.#wake = { promise, resolve: wake }
    }
    return this.#wake.promise
  }

  #notify (): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.resolve()
  }
}
