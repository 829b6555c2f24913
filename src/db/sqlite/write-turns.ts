// The worker threads of one process take turns at writing the SQLite file: a
// lock word in shared memory, waited on without blocking the event loop, handed
// on as a commit ends. Left to SQLite's lock, creates halved (docs/WORKERS.md,
// "Writes"); other processes on the file still meet that lock and its retries.

/** Made once by the main thread and given to every worker. */
export function createWriteTurns (): SharedArrayBuffer {
  return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)
}

/** The lock word holds its owner, threadId + 1, so that the owner of a turn a dead thread held can be told. */
export class WriteTurn {
  readonly #word: Int32Array
  readonly #owner: number

  constructor (turns: SharedArrayBuffer, threadId: number) {
    this.#word = new Int32Array(turns)
    this.#owner = threadId + 1
  }

  /** Resolves once this thread holds the turn. */
  async take (): Promise<void> {
    for (;;) {
      const held = Atomics.compareExchange(this.#word, 0, 0, this.#owner)
      if (held === 0) return
      // A bounded wait: a wake-up lost between the read and the wait costs at most this.
      const wait = Atomics.waitAsync(this.#word, 0, held, 50)
      if (wait.async) await wait.value
    }
  }

  give (): void {
    Atomics.compareExchange(this.#word, 0, this.#owner, 0)
    Atomics.notify(this.#word, 0, 1)
  }
}

/** Frees the turn a thread held when it ended: it would otherwise stop every other worker's writes. */
export function releaseTurnOf (turns: SharedArrayBuffer, threadId: number): void {
  const word = new Int32Array(turns)
  if (Atomics.compareExchange(word, 0, threadId + 1, 0) === threadId + 1) Atomics.notify(word, 0, 1)
}
