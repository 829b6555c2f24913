// How long the oldest operation waiting for a pool connection has waited,
// which the shedder reads (docs/OPERATING.md: Overload). node-postgres counts
// its waiters (`waitingCount`) but keeps no time for them, so each call that
// joins the pool's queue is noted here; the queue is served first in, first
// out, so its waiters are always the newest of those noted.

/** What is read of the pool: its queue's length. */
interface Queue {
  readonly waitingCount: number
}

export class PoolWaits {
  /** When each noted call joined the queue, oldest first, from `#head` on. */
  #since: number[] = []
  #head = 0
  readonly #clock: () => number

  /** `clock`: monotonic milliseconds. */
  constructor (clock: () => number) {
    this.#clock = clock
  }

  /**
   * Makes a call into the pool (`query`, `connect`), noting when it joined
   * the queue if it did: node-postgres queues it in the call itself.
   */
  enter<T> (pool: Queue, call: () => T): T {
    const before = pool.waitingCount
    const result = call()
    const after = pool.waitingCount
    if (after > before) {
      this.#keep(after - 1)
      this.#since.push(this.#clock())
    }
    return result
  }

  /** How long the oldest of the pool's waiters has waited, in milliseconds; 0 when none waits. */
  longest (pool: Queue): number {
    this.#keep(pool.waitingCount)
    const oldest = this.#since[this.#head]
    return oldest === undefined ? 0 : Math.max(0, this.#clock() - oldest)
  }

  /** Forgets all but the newest `waiting` noted: the others have had their connection, or given up on it. */
  #keep (waiting: number): void {
    const noted = this.#since.length - this.#head
    if (noted <= waiting) return
    this.#head += noted - waiting
    // The array is copied only once half of it is behind the head, so that forgetting costs O(1) a call, amortized.
    if (this.#head > this.#since.length / 2) {
      this.#since = this.#since.slice(this.#head)
      this.#head = 0
    }
  }
}
