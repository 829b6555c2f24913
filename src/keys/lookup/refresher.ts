// When the token index reads the database: every REFRESH_MS, and on demand
// for a token it lacks, never two reads at once.
import { setTimeout as sleep } from 'node:timers/promises'
import type { TokenIndex } from './token-index.js'

/** How often the index reads the keys made since its last read. */
const REFRESH_MS = 500
/** Reads begun for tokens the filter lacks start at least this far apart: guessing costs at most 1000 / CATCH_UP_MS queries a second. */
const CATCH_UP_MS = 20

export interface Refresher {
  /** Reads the keys made since the last refresh (all of them the first time); one at a time. */
  refresh: () => Promise<void>
  /** Resolves after a refresh begun after this call, which every caller waiting shares; never rejects. */
  refreshAfterNow: () => Promise<void>
  /** Refreshes now, then every REFRESH_MS until close. */
  start: () => Promise<void>
  close: () => void
}

export function createRefresher (index: TokenIndex, clock: () => number, onRefreshError: (error: unknown) => void): Refresher {
  let timer: NodeJS.Timeout | undefined
  let closed = false

  let running: Promise<void> | undefined
  let lastStarted = -Infinity
  function refresh (): Promise<void> {
    if (running === undefined) {
      lastStarted = clock()
      running = index.refresh().finally(() => { running = undefined })
    }
    return running
  }

  // Callers that arrive while a refresh runs wait for the next one, which
  // they all share: the one running may have begun before their key was made.
  let following: Promise<void> | undefined
  function refreshAfterNow (): Promise<void> {
    following ??= (async () => {
      await running?.catch(() => {})
      const wait = lastStarted + CATCH_UP_MS - clock()
      if (wait > 0) await sleep(wait)
      following = undefined
      await refresh().catch(onRefreshError)
    })()
    return following
  }

  async function tick (): Promise<void> {
    try {
      await refresh()
    } catch (error) {
      onRefreshError(error)
    }
  }

  function schedule (): void {
    if (closed) return
    // After each refresh ends, not on a fixed beat: a slow database never has two at once.
    timer = setTimeout(() => { tick().then(schedule, onRefreshError) }, REFRESH_MS)
    timer.unref()
  }

  return {
    refresh,
    refreshAfterNow,
    async start () {
      await tick()
      schedule()
    },
    close () {
      closed = true
      clearTimeout(timer)
    }
  }
}
