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

export type GiveBack = () => void

export class FairPool {
  #taken = 0
  /** Key id → its requests waiting for a place, oldest first; the map's order is the keys' turn. */
  readonly #waiting = new Map<number, Array<(giveBack: GiveBack) => void>>()

  constructor (readonly places: number) {}

  /**
   * A place for a request of key `keyId`: the function that gives it back
   * when one is free and nobody waits, else a promise of it. Never rejects.
   */
  take (keyId: number): GiveBack | Promise<GiveBack> {
    if (this.#taken < this.places && this.#waiting.size === 0) {
      this.#taken++
      return this.#giveBackOnce()
    }
    return new Promise((resolve) => {
      const queue = this.#waiting.get(keyId)
      if (queue === undefined) this.#waiting.set(keyId, [resolve])
      else queue.push(resolve)
    })
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
    const start = queue.shift()
    this.#waiting.delete(keyId)
    if (queue.length > 0) this.#waiting.set(keyId, queue)
    start?.(this.#giveBackOnce())
  }
}
