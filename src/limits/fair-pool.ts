// The database pool's connections, given to keys in turn (docs/INTERNALS.md:
// "The pool, in turn"). A pool queues its waiting queries first come, first
// served, so a key with 100 requests in flight puts 100 queries ahead of
// another key's one. Here a request takes one of the pool's places before
// its operation; when every place is taken it waits in its key's queue, and
// each place given back goes to the next key in turn, so another key's
// request waits for one query, not for a hundred. A key alone uses every
// place. Per process, as the pool is.
//
// No library does this: p-limit and p-queue keep one queue, first come
// first served, which is the pool's own order.
//
// A request waits for a place at most PLACE_WAIT_MS, then goes on without
// one, into the pool's own queue: so its wait for a connection stays bounded
// by the pool's timeout (503 when the database does not answer), and the
// shedding, which reads the pool's waits, still sees a pool that cannot
// keep up.

export type GiveBack = () => void

/** How long a request waits for a place before it goes on without one. */
const PLACE_WAIT_MS = 1_000

const NOTHING_TO_GIVE_BACK: GiveBack = () => {}

interface Waiting {
  start: (giveBack: GiveBack) => void
  timer: NodeJS.Timeout
}

export class FairPool {
  #taken = 0
  /** Key id → its requests waiting for a place, oldest first; the map's order is the keys' turn. */
  readonly #waiting = new Map<number, Waiting[]>()

  constructor (readonly places: number, readonly waitMs: number = PLACE_WAIT_MS) {}

  /**
   * A place for a request of key `keyId`: the function that gives it back
   * when one is free and nobody waits, else a promise of it, which after
   * `waitMs` resolves without a place. Never rejects.
   */
  take (keyId: number): GiveBack | Promise<GiveBack> {
    if (this.#taken < this.places && this.#waiting.size === 0) {
      this.#taken++
      return this.#giveBackOnce()
    }
    return new Promise((resolve) => {
      const waiting: Waiting = {
        start: resolve,
        timer: setTimeout(() => {
          this.#leave(keyId, waiting)
          resolve(NOTHING_TO_GIVE_BACK)
        }, this.waitMs)
      }
      const queue = this.#waiting.get(keyId)
      if (queue === undefined) this.#waiting.set(keyId, [waiting])
      else queue.push(waiting)
    })
  }

  #leave (keyId: number, waiting: Waiting): void {
    const queue = this.#waiting.get(keyId)
    if (queue === undefined) return
    const at = queue.indexOf(waiting)
    if (at !== -1) queue.splice(at, 1)
    if (queue.length === 0) this.#waiting.delete(keyId)
  }

  /** Requests waiting for a place, every key's. */
  waiting (): number {
    let count = 0
    for (const queue of this.#waiting.values()) count += queue.length
    return count
  }

  #giveBackOnce (): GiveBack {
    let given = false
    return () => {
      if (given) return
      given = true
      this.#next()
    }
  }

  // The place goes to the key whose turn it is, which then goes to the end of the line.
  #next (): void {
    const first = this.#waiting.entries().next()
    if (first.done === true) {
      this.#taken--
      return
    }
    const [keyId, queue] = first.value
    const next = queue.shift()
    this.#waiting.delete(keyId)
    if (queue.length > 0) this.#waiting.set(keyId, queue)
    if (next === undefined) {
      this.#taken--
      return
    }
    clearTimeout(next.timer)
    next.start(this.#giveBackOnce())
  }
}
