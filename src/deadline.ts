// One way to give a promise a deadline, for the rate-limit stores and the
// readiness check. Written by hand on the global setTimeout rather than with
// AbortSignal.timeout() or timers/promises: on Node 20, node:test's mocked
// timers reach neither, and the readiness tests move time with them.

/** The rejection of a promise that did not answer in time. */
export class DeadlineError extends Error {
  override name = 'DeadlineError'

  constructor (readonly ms: number) {
    super(`no answer within ${ms} ms`)
  }
}

/**
 * What `work` answers, or a DeadlineError once `ms` have passed without its
 * answer. `work` gets a signal that is aborted as soon as the race is over,
 * either way, so that a listener it set can let go.
 */
export async function within<T> (ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const over = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((resolve, reject) => {
    timer = setTimeout(() => { reject(new DeadlineError(ms)) }, ms)
  })
  try {
    return await Promise.race([work(over.signal), late])
  } finally {
    clearTimeout(timer)
    over.abort()
  }
}
