// One way to give a promise a deadline, for the rate-limit stores and the
// readiness check. Written by hand on the global setTimeout rather than with
// AbortSignal.timeout() or timers/promises: on Node 20, node:test's mocked
// timers reach neither, and the readiness tests move time with them. Nor is
// there an AbortController per call: on Node 20 making one and aborting it
// took some 21 µs, twice a request on Redis (docs/PERFORMANCE.md: "A
// deadline's price").

/** The rejection of a promise that did not answer in time. */
export class DeadlineError extends Error {
  override name = 'DeadlineError'

  constructor (readonly ms: number) {
    super(`no answer within ${ms} ms`)
  }
}

/** What `work` may read, after its own awaits, to learn that its caller stopped waiting for it. */
export interface Waiting {
  readonly stopped: boolean
}

/**
 * What `work` answers, or a DeadlineError once `ms` have passed without its
 * answer; from then on, `work`'s `waiting.stopped` is true, so that what it
 * gets afterwards (a slot, say) can be given back.
 */
export async function within<T> (ms: number, work: (waiting: Waiting) => Promise<T>): Promise<T> {
  const waiting = { stopped: false }
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((resolve, reject) => {
    timer = setTimeout(() => {
      waiting.stopped = true
      reject(new DeadlineError(ms))
    }, ms)
  })
  try {
    return await Promise.race([work(waiting), late])
  } finally {
    clearTimeout(timer)
  }
}
