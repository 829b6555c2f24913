// Requests in flight per key (docs/API.md: Requests in flight): a cap that
// holds exactly across every worker thread of one process, in memory they all
// share. One process with one worker uses the same table, so the rule exists
// once. Written by hand: no library keeps a counting semaphore in a
// SharedArrayBuffer that a supervisor can clean up after a thread that died
// holding slots (docs/INTERNALS.md, section "Requests in flight").
//
// A key's slot has a count per worker (a column); a request adds one to its
// worker's column, then sums the columns, and takes its addition back when the
// sum is over the cap. The last addition in Atomics' single order sees every
// earlier one, so the sum admitted never passes the cap; two requests adding
// at once may both take theirs back, and then try again at once. When a
// worker dies, the main thread empties its column.
//
// With Redis, a request that has its slot here asks the shared store for one
// of the key's slots across every instance as well (redis-slots.ts); this
// table then keeps one process's share under the cap without a round trip,
// and decides alone while Redis is away (resilient-store.ts).
import { NOTHING_HELD, type Release, type SharedSlots } from './store.js'

/** Keys a table holds at once: more cost their requests no cap (fail open), and one warning. */
const DEFAULT_SLOTS = 1 << 16
/** The slots a key's search looks at before it takes the table for full. */
const MAX_PROBES = 64

const H_VERSION = 0
const H_SLOTS = 1
const H_COLUMNS = 2
const HEADER_WORDS = 4
const LAYOUT_VERSION = 1

/** Per slot: the key's tag (0: empty), a word bumped on every release (what waiters wait on), then one count per worker. */
const S_TAG = 0
const S_RELEASES = 1
const S_COUNTS = 2

/** What the main thread makes once and hands to every worker: structured cloning shares a SharedArrayBuffer. */
export interface InFlightTable {
  readonly buffer: SharedArrayBuffer
}

export function createInFlightTable ({ columns, slots = DEFAULT_SLOTS }: { columns: number, slots?: number }): InFlightTable {
  if (!Number.isSafeInteger(columns) || columns < 1) throw new RangeError(`columns must be a positive integer, not ${columns}`)
  if (!Number.isSafeInteger(slots) || slots < 1 || (slots & (slots - 1)) !== 0) throw new RangeError(`slots must be a power of two, not ${slots}`)
  const buffer = new SharedArrayBuffer(4 * (HEADER_WORDS + slots * (S_COUNTS + columns)))
  const words = new Int32Array(buffer)
  words[H_VERSION] = LAYOUT_VERSION
  words[H_SLOTS] = slots
  words[H_COLUMNS] = columns
  return { buffer }
}

/** Gives back every slot a worker's column holds, for the main thread when that worker has exited, however it ended. */
export function releaseColumn ({ buffer }: InFlightTable, column: number): number {
  const words = new Int32Array(buffer)
  const stride = S_COUNTS + (words[H_COLUMNS] ?? 0)
  let released = 0
  for (let base = HEADER_WORDS; base < words.length; base += stride) {
    const held = Atomics.exchange(words, base + S_COUNTS + column, 0)
    if (held !== 0) {
      released += held
      Atomics.add(words, base + S_RELEASES, 1)
      Atomics.notify(words, base + S_RELEASES)
    }
  }
  return released
}

export class InFlight {
  readonly #words: Int32Array
  readonly #slots: number
  readonly #columns: number
  readonly #stride: number
  readonly #column: number
  readonly #full: () => void
  readonly #shared: SharedSlots | undefined
  /** Per key, this thread's requests waiting for a slot. */
  readonly #waiting = new Map<number, number>()

  /**
   * `column`: this worker's own, below the table's columns. `full`: told when
   * a key finds no slot and goes uncapped. `shared`: the slots every instance
   * shares, when there are (RateLimitStore `slots`).
   */
  constructor ({ buffer }: InFlightTable, column: number, full: () => void = () => {}, shared?: SharedSlots) {
    this.#words = new Int32Array(buffer)
    if (this.#words[H_VERSION] !== LAYOUT_VERSION) throw new Error('the in-flight table has another layout')
    this.#slots = this.#words[H_SLOTS] ?? 0
    this.#columns = this.#words[H_COLUMNS] ?? 0
    if (!Number.isInteger(column) || column < 0 || column >= this.#columns) throw new RangeError(`column ${column} is not one of the table's ${this.#columns}`)
    this.#stride = S_COUNTS + this.#columns
    this.#column = column
    this.#full = full
    this.#shared = shared
  }

  /**
   * A slot of `key`'s `cap`, waiting for one at most `waitMs`; undefined
   * when none came free in that time. A key the full table has no room for
   * is let through uncapped. Once as many of the key's requests as its cap
   * wait in this thread, the next is refused at once: a greedy client's
   * hundreds of connections each cost a refusal, not a wait held open
   * (docs/INTERNALS.md, section "Requests in flight"). `ask`: how the
   * shared store is asked for the slot the first time (the gate's asks for
   * the request's limit with it, RateLimitStore `hitHolding`); later asks,
   * after a wait, are the store's plain `take`.
   */
  async acquire (key: number, cap: number, waitMs: number, ask?: () => Promise<Release | undefined>): Promise<Release | undefined> {
    const base = this.#slotOf(key)
    if (base === undefined) {
      this.#full()
      return NOTHING_HELD
    }
    const words = this.#words
    const own = base + S_COUNTS + this.#column
    const deadline = performance.now() + waitMs
    let local: Release | undefined
    let waits = false
    try {
      while (local === undefined) {
        const releases = Atomics.load(words, base + S_RELEASES)
        const room = this.#tryTake(base, own, cap)
        if (room === 'taken') local = this.#releaseOf(base, own)
        // Another request added at the same moment and took its addition back too: one of the two may have room now.
        else if (room === 'contended') continue
        else if (deadline <= performance.now()) return undefined
        else {
          if (!waits) {
            const waiting = this.#waiting.get(key) ?? 0
            if (waiting >= cap) return undefined
            this.#waiting.set(key, waiting + 1)
            waits = true
          }
          await this.#released(base, releases, deadline)
        }
      }
    } finally {
      if (waits) this.#stopsWaiting(key)
    }
    return this.#shared === undefined ? local : await this.#acquireShared(key, cap, base, local, deadline, ask)
  }

  /**
   * The key's slot across every instance, for a request that has one here.
   * Other instances' releases send no word, so a request that finds every
   * slot taken waits for a release in this process, which frees one
   * everywhere, or for the deadline, and then asks once more: at most one
   * round trip per release here, and one at the end, whatever the load.
   */
  async #acquireShared (key: number, cap: number, base: number, local: Release, deadline: number, ask?: () => Promise<Release | undefined>): Promise<Release | undefined> {
    const shared = this.#shared as SharedSlots
    let first = ask
    for (;;) {
      // Read before asking, so that a release while the question is out is not missed.
      const releases = Atomics.load(this.#words, base + S_RELEASES)
      let everywhere: Release | undefined
      try {
        everywhere = first === undefined ? await shared.take(`key:${key}`, cap) : await first()
        first = undefined
      } catch (error) {
        local()
        throw error
      }
      if (everywhere !== undefined) {
        // The shared slot first: a request this release wakes here then finds it free there too.
        return () => { everywhere(); local() }
      }
      if (deadline <= performance.now()) {
        local()
        return undefined
      }
      await this.#released(base, releases, deadline)
    }
  }

  /** Until the key's release word moves from `releases`, or the deadline. */
  async #released (base: number, releases: number, deadline: number): Promise<void> {
    const left = deadline - performance.now()
    const waited = Atomics.waitAsync(this.#words, base + S_RELEASES, releases, left)
    if (!waited.async) return
    // V8's own timeout holds no handle of the event loop's, and may come
    // after the loop has nothing else to do: a timer of ours ends the wait.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, left)
      waited.value.then(() => { clearTimeout(timer); resolve() }, resolve)
    })
  }

  #stopsWaiting (key: number): void {
    const left = (this.#waiting.get(key) ?? 1) - 1
    if (left === 0) this.#waiting.delete(key)
    else this.#waiting.set(key, left)
  }

  /** Requests of `key` in flight now, across every worker. */
  inFlight (key: number): number {
    const base = this.#slotOf(key)
    return base === undefined ? 0 : this.#sum(base)
  }

  #tryTake (base: number, own: number, cap: number): 'taken' | 'full' | 'contended' {
    const words = this.#words
    Atomics.add(words, own, 1)
    const sum = this.#sum(base)
    if (sum <= cap) return 'taken'
    Atomics.sub(words, own, 1)
    return sum - 1 < cap ? 'contended' : 'full'
  }

  #sum (base: number): number {
    let sum = 0
    for (let column = 0; column < this.#columns; column++) sum += Atomics.load(this.#words, base + S_COUNTS + column)
    return sum
  }

  #releaseOf (base: number, own: number): Release {
    let held = true
    return () => {
      if (!held) return
      held = false
      const words = this.#words
      Atomics.sub(words, own, 1)
      Atomics.add(words, base + S_RELEASES, 1)
      Atomics.notify(words, base + S_RELEASES, 1)
    }
  }

  /** The slot of `key`, claimed for it on its first request (a slot is never given to another key); undefined when the search finds no room. */
  #slotOf (key: number): number | undefined {
    const words = this.#words
    // Key ids are positive; the tag keeps 0 for an empty slot.
    const tag = (key % 0x7fffffff) + 1
    let index = Math.imul(key | 0, 0x9e3779b1) >>> 0
    for (let probe = 0; probe < MAX_PROBES; probe++, index++) {
      const base = HEADER_WORDS + (index & (this.#slots - 1)) * this.#stride
      const seen = Atomics.load(words, base + S_TAG)
      if (seen === tag) return base
      if (seen === 0) {
        const before = Atomics.compareExchange(words, base + S_TAG, 0, tag)
        if (before === 0 || before === tag) return base
      }
    }
    return undefined
  }
}
