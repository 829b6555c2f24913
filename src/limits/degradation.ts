// Whether an instance limits on its own, for every thread of it at once
// (docs/WORKERS.md): with workers, each has a Redis store of its own, and
// one worker finding Redis away, or back, moves them all. Otherwise an
// instance would count a key partly in Redis and partly in-process, and
// admit more than its limit, while its /readyz said either, by worker.

const SHARED = 0
const DEGRADED = 1

export class Degradation {
  /** Shared with the workers in their workerData: structured cloning shares a SharedArrayBuffer, never copies it. */
  readonly buffer: SharedArrayBuffer
  /** SHARED or DEGRADED, for Atomics. */
  readonly #state: Int32Array
  /** When the degradation began, for the log line that ends it. */
  readonly #since: Float64Array

  /** A new state, the process's own; or, given the main thread's buffer, a worker's view of that one. */
  constructor (buffer = new SharedArrayBuffer(16)) {
    this.buffer = buffer
    this.#state = new Int32Array(buffer, 0, 1)
    this.#since = new Float64Array(buffer, 8, 1)
  }

  get degraded (): boolean {
    return Atomics.load(this.#state, 0) === DEGRADED
  }

  /** Marks the instance degraded from `now`; true for the one caller that changed it. */
  degrade (now: number): boolean {
    if (Atomics.compareExchange(this.#state, 0, SHARED, DEGRADED) !== SHARED) return false
    this.#since[0] = now
    return true
  }

  /** Marks the instance back on the shared store; for the one caller that changed it, how long it was degraded. */
  restore (now: number): number | undefined {
    if (Atomics.compareExchange(this.#state, 0, DEGRADED, SHARED) !== DEGRADED) return undefined
    return now - (this.#since[0] ?? now)
  }
}
