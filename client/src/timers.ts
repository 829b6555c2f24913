// Waits on the global setTimeout, looked up at each call, so that tests can
// run the client on fake timers (node:test's `mock.timers`).

/** Resolves after `ms`, or as soon as `wake` resolves, whichever is first; the timer never outlives the wait. */
export async function sleep (ms: number, wake?: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const elapsed = new Promise<void>((resolve) => { timer = setTimeout(resolve, Math.max(0, ms)) })
  try {
    await (wake === undefined ? elapsed : Promise.race([elapsed, wake]))
  } finally {
    clearTimeout(timer)
  }
}

/** What a call throws when it runs out of its time budget, as `AbortSignal.timeout()` does. */
export function timeoutError (timeoutMs: number): DOMException {
  return new DOMException(`The call did not complete within its time budget (timeoutMs: ${timeoutMs}).`, 'TimeoutError')
}
