// A key's share of each turn of the event loop (docs/API.md: "Requests in
// flight"; docs/PERFORMANCE.md: "A greedy key beside a polite one").
//
// Node serves every request that arrived in one turn before it looks at the
// sockets again, so a key looping on 500 connections makes each turn 500
// answers long, and a polite key's request or a health check waits behind
// all of them. Here a key starts at most SHARE_A_TURN requests a turn; its
// others wait, in the order they came, for the turns that follow, while
// other callers go first. The work done is the same, in another order, and
// a key alone on the service is not slowed. No library does this: it is a
// scheduler of promises at the loop's check phase, which only the process
// itself can see.

/** Requests a key starts in one turn; a few times the answers a turn needs to stay a millisecond or two long. */
export const SHARE_A_TURN = 8

export class TurnShare {
  /** Key id → requests it started in this turn. */
  readonly #started = new Map<number, number>()
  /** Key id → its requests waiting for a later turn, oldest first. */
  readonly #waiting = new Map<number, Array<() => void>>()
  #turnEnds = false

  /**
   * A request of key `keyId` may start: undefined when it may now, else a
   * promise that resolves when it may, in a later turn. Never rejects.
   */
  take (keyId: number): Promise<void> | undefined {
    const waiting = this.#waiting.get(keyId)
    const started = this.#started.get(keyId) ?? 0
    this.#endTurnSoon()
    if (waiting === undefined && started < SHARE_A_TURN) {
      this.#started.set(keyId, started + 1)
      return undefined
    }
    return new Promise((resolve) => {
      if (waiting === undefined) this.#waiting.set(keyId, [resolve])
      else waiting.push(resolve)
    })
  }

  /** Requests of key `keyId` waiting for a later turn. */
  waiting (keyId: number): number {
    return this.#waiting.get(keyId)?.length ?? 0
  }

  // setImmediate runs once the loop has read its sockets: the turn's end.
  #endTurnSoon (): void {
    if (this.#turnEnds) return
    this.#turnEnds = true
    setImmediate(this.#nextTurn)
  }

  readonly #nextTurn = (): void => {
    this.#turnEnds = false
    this.#started.clear()
    if (this.#waiting.size === 0) return
    // The waiting start the new turn, each key's share of it, before its own new arrivals.
    for (const [keyId, queue] of this.#waiting) {
      const starting = queue.splice(0, SHARE_A_TURN)
      this.#started.set(keyId, starting.length)
      if (queue.length === 0) this.#waiting.delete(keyId)
      for (const start of starting) start()
    }
    this.#endTurnSoon()
  }
}
