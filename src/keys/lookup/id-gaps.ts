// PostgreSQL hands out ids as INSERTs start and commits them in any order, so
// a read may see key 11 before key 10: the ids skipped are read again until
// they come or GAP_MS passes (a rolled-back INSERT leaves a gap for good).

/** How long a skipped id is read again for: far longer than a key's INSERT may run (5 s statement timeout). */
const GAP_MS = 30_000
/** Gaps are looked for among this many ids below the highest read. */
const GAP_WINDOW = 1000

/** The ids below the highest read that have not been read yet, and when each was first missed. */
export class IdGaps {
  readonly #since = new Map<number, number>()

  /** Whether `id` was a gap, which it no longer is. */
  fill (id: number): boolean {
    return this.#since.delete(id)
  }

  /** Notes the ids between `after` and `id` (both read) as missed at `now`, the last GAP_WINDOW of them only. */
  skipped (after: number, id: number, now: number): void {
    for (let gap = Math.max(after, id - GAP_WINDOW - 1) + 1; gap < id; gap++) this.#since.set(gap, now)
  }

  /** Gives up on the gaps older than GAP_MS, or further than GAP_WINDOW below `highest`. */
  prune (now: number, highest: number): void {
    for (const [id, since] of this.#since) {
      if (now - since > GAP_MS || id < highest - GAP_WINDOW) this.#since.delete(id)
    }
  }

  /** The lowest gap, Infinity when there is none. */
  lowest (): number {
    let min = Infinity
    for (const id of this.#since.keys()) if (id < min) min = id
    return min
  }
}
