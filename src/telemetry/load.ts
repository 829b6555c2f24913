// Whether the service itself is overloaded, read every half second for the
// shedder (plugins/shed.ts): its event loop's delay, and, on PostgreSQL, how
// long an operation has waited for a pool connection (docs/OPERATING.md:
// Overload). No web framework here.
import { monitorEventLoopDelay } from 'node:perf_hooks'

/** What overload is made of, as the metrics and the log name it. */
export type LoadSignal = 'event_loop_delay' | 'db_pool_wait'

export interface LoadReading {
  /** The event loop's mean delay over the last window, in milliseconds: about how long new work waited for the loop. */
  eventLoopDelayMs: number
  /** How long the operation that has waited longest for a database connection has waited, in milliseconds; undefined without a pool (SQLite). */
  dbPoolWaitMs: number | undefined
}

export interface LoadThresholds {
  eventLoopDelayMs: number
  dbPoolWaitMs: number
}

/** What the shedder reads on every API request: a field set at each reading, never a measurement of its own. */
export interface Overload {
  /** The signal over its threshold at the last reading; undefined when none is. */
  readonly cause: LoadSignal | undefined
  readonly reading: LoadReading
}

/** How often the load is read: also the window over which the event loop's delay is averaged. */
export const READ_EVERY_MS = 500

/** The resolution of Node's event-loop histogram, and its default. */
const RESOLUTION_MS = 10

export interface LoadWatch extends Overload {
  /** Reads the load now; the timer calls it every `everyMs`. */
  read: () => void
  /**
   * Forgets what was read so far, and the window being read, and starts the
   * next one now: the service's start holds the event loop (loading,
   * compiling its schemas), which is not load.
   */
  forget: () => void
  close: () => void
}

/**
 * Reads the load every `everyMs` and keeps what it found. The first reading
 * is taken at once; `onReading` is told each one (the metrics).
 */
export function watchLoad ({ read, thresholds, everyMs = READ_EVERY_MS, onReading }: {
  read: () => LoadReading
  thresholds: LoadThresholds
  everyMs?: number
  onReading?: (reading: LoadReading) => void
}): LoadWatch {
  const calm: LoadReading = { eventLoopDelayMs: 0, dbPoolWaitMs: undefined }
  const watch: { -readonly [K in keyof LoadWatch]: LoadWatch[K] } = {
    cause: undefined,
    reading: calm,
    read () {
      const reading = read()
      watch.cause = causeOf(reading, thresholds)
      watch.reading = reading
      onReading?.(reading)
    },
    forget () {
      read()
      watch.cause = undefined
      watch.reading = calm
      timer.refresh()
    },
    close () { clearInterval(timer) }
  }
  const timer = setInterval(() => { watch.read() }, everyMs).unref()
  watch.read()
  return watch
}

function causeOf ({ eventLoopDelayMs, dbPoolWaitMs }: LoadReading, thresholds: LoadThresholds): LoadSignal | undefined {
  if (eventLoopDelayMs > thresholds.eventLoopDelayMs) return 'event_loop_delay'
  if (dbPoolWaitMs !== undefined && dbPoolWaitMs > thresholds.dbPoolWaitMs) return 'db_pool_wait'
  return undefined
}

export interface EventLoopDelay {
  /** The mean delay since the last call, in milliseconds. */
  read: () => number
  /** Stops Node's histogram, whose timer would otherwise tick for as long as the process lives. */
  close: () => void
}

/**
 * The event loop's delay from Node's own histogram, which times the turns
 * of the loop by a timer of RESOLUTION_MS: a loop that takes 300 ms a turn
 * records about 300 ms each turn. The mean over a window, not a percentile,
 * so that one long turn (a collection, a slow request) is diluted by the
 * quick ones around it, and only a loop that stays slow reads high.
 * https://nodejs.org/api/perf_hooks.html#perf_hooksmonitoreventloopdelayoptions
 */
export function eventLoopDelay (clock: () => number = () => performance.now()): EventLoopDelay {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  histogram.enable()
  let since = clock()
  return {
    read () {
      const now = clock()
      // Each turn is recorded with the timer's own interval in it. A window
      // in which the timer never ran was one turn, as long as the window.
      const mean = histogram.count === 0 ? now - since : histogram.mean / 1e6 - RESOLUTION_MS
      histogram.reset()
      since = now
      return Math.max(0, mean)
    },
    close () { histogram.disable() }
  }
}

/** The service's own load: this thread's event loop and, on PostgreSQL, the pool of its storage (db/postgres/pool-waits.ts). */
export function watchOwnLoad ({ poolUse, thresholds, onReading }: {
  poolUse: () => { longestWaitMs: number } | undefined
  thresholds: LoadThresholds
  onReading?: (reading: LoadReading) => void
}): LoadWatch {
  const delay = eventLoopDelay()
  const watch = watchLoad({ read: () => ({ eventLoopDelayMs: delay.read(), dbPoolWaitMs: poolUse()?.longestWaitMs }), thresholds, onReading })
  const stop = watch.close
  watch.close = () => {
    stop()
    delay.close()
  }
  return watch
}
