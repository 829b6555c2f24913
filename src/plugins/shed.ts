// Shedding (docs/OPERATING.md: Overload): while the service itself is
// overloaded (telemetry/load.ts), API requests are answered 503 `overloaded`
// before their body is read or the database asked, so that the refusal
// costs little of what the overload is short of. Past a threshold, the
// requests of busy keys (many in flight, or waiting for a turn) are shed,
// by the gate once the key is known; past twice the threshold, every API
// request, by the first /v1 hook, before its key is looked up. So one
// greedy key is shed before its neighbours are. With SHED=log a request is
// served, and the log says it would have been shed.
//
// Not @fastify/under-pressure: its event-loop check reads a histogram of its
// own on its own timer, so a test can only block the real loop and race
// that timer; it knows nothing of the database pool's wait; its answer is
// not the Error body; and it leaves its histogram running after the app
// closes (docs/INTERNALS.md, section "Shed").
import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'
import type { ShedMode } from '../config.js'
import { Errors, type ApiError } from '../errors.js'
import { overloadHeaders } from '../limits/limit.js'
import type { LoadReading, LoadSignal, LoadThresholds, Overload } from '../telemetry/load.js'
import type { Metrics } from '../telemetry/metrics.js'
import { sendError } from './errors.js'

/**
 * Whole seconds a shed request is told to wait: the load is read again
 * every half second, so by then it has been read four times, and clients'
 * own backoff and jitter spread their returns (docs/API.md: Overload).
 */
const SHED_RETRY_AFTER_S = 2

/** At most one line this often, however many requests are shed: each says how many since the one before. */
const LOG_EVERY_MS = 10_000

/** What the shedder's lines are written with: pino's logger is one. */
interface ShedLogger {
  warn: (fields: object, message: string) => void
  info: (fields: object, message: string) => void
}

export interface ShedOptions {
  mode: Exclude<ShedMode, 'off'>
  overload: Overload
  thresholds: LoadThresholds
  /** Unix milliseconds, for the rate-limit headers' reset. */
  now: () => number
  /** Monotonic milliseconds, for the log's pace. */
  monotonic: () => number
  logger?: ShedLogger
  metrics?: Pick<Metrics, 'shed'>
}

/**
 * Requests in flight, in this process, from which a key counts as busy while
 * the service is overloaded: more than a polite client keeps going at once.
 */
export const BUSY_IN_FLIGHT = 4

/** Decides one API request: the refusal to answer it with, or undefined to let it go on. */
export interface Shed {
  /** Before the gate, whoever sends it: refused while a signal reads twice its threshold. */
  anyone: (reply: FastifyReply) => ApiError | undefined
  /** In the gate, once its key is known: refused past the threshold itself when `busy(keyId)` says its key is busy (read only then). */
  busyKey: (reply: FastifyReply, keyId: number, busy: (keyId: number) => boolean) => ApiError | undefined
}

export function createShed ({ mode, overload, thresholds, now, monotonic, logger, metrics }: ShedOptions): Shed {
  // One for every answer: a 5xx captures its stack when it is made (errors.ts).
  const refusal = Errors.overloaded(SHED_RETRY_AFTER_S)
  let lastLine = -Infinity
  /** Requests shed since the last line. */
  let unlogged = 0
  /** Some were shed since the last line that said the overload had ended. */
  let shedding = false

  const report = (cause: LoadSignal, reading: LoadReading): void => {
    const at = monotonic()
    if (at - lastLine < LOG_EVERY_MS) return
    const fields = { shed: mode, cause, eventLoopDelayMs: Math.round(reading.eventLoopDelayMs), dbPoolWaitMs: rounded(reading.dbPoolWaitMs), requests: unlogged }
    const why = cause === 'event_loop_delay'
      ? `the event loop's delay is ${fields.eventLoopDelayMs} ms, over SHED_EVENT_LOOP_DELAY_MS=${thresholds.eventLoopDelayMs}`
      : `an operation has waited ${fields.dbPoolWaitMs ?? 0} ms for a database connection, over SHED_DB_POOL_WAIT_MS=${thresholds.dbPoolWaitMs}`
    logger?.warn(fields, mode === 'on'
      ? `overloaded (${why}): ${requests(unlogged)} answered 503 overloaded since the last line`
      : `overloaded (${why}): ${requests(unlogged)} would have been shed since the last line; SHED=log serves them`)
    lastLine = at
    unlogged = 0
  }

  // Written by the first request that is not shed, at the log's pace, since nothing else runs when an overload ends.
  const settle = (): void => {
    const at = monotonic()
    if (at - lastLine < LOG_EVERY_MS) return
    logger?.info({ shed: mode, requests: unlogged }, mode === 'on'
      ? `no longer overloaded: ${requests(unlogged)} answered 503 overloaded since the last line`
      : `no longer overloaded: ${requests(unlogged)} would have been shed since the last line`)
    lastLine = at
    unlogged = 0
    shedding = false
  }

  const shed = (reply: FastifyReply, cause: LoadSignal): ApiError | undefined => {
    metrics?.shed(mode)
    unlogged++
    shedding = true
    report(cause, overload.reading)
    if (mode === 'log') return undefined
    reply.headers(overloadHeaders(now(), SHED_RETRY_AFTER_S))
    return refusal
  }

  return {
    anyone (reply) {
      const cause = overload.cause
      if (cause === undefined) {
        if (shedding) settle()
        return undefined
      }
      return severe(overload.reading, thresholds) ? shed(reply, cause) : undefined
    },
    busyKey (reply, keyId, busy) {
      const cause = overload.cause
      return cause === undefined || !busy(keyId) ? undefined : shed(reply, cause)
    }
  }
}

/** A signal at twice its threshold: the busy keys' shedding has not been enough. */
function severe ({ eventLoopDelayMs, dbPoolWaitMs }: LoadReading, thresholds: LoadThresholds): boolean {
  return eventLoopDelayMs > 2 * thresholds.eventLoopDelayMs || (dbPoolWaitMs !== undefined && dbPoolWaitMs > 2 * thresholds.dbPoolWaitMs)
}

const requests = (count: number): string => `${count} API request${count === 1 ? '' : 's'}`

function rounded (ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms)
}

/** The shedder, on every request of the scope it is registered in: before the gate, so that a request shed whoever sends it costs no lookup and no count. */
export default fp<{ shed: Shed }>(async function shed (app, { shed }) {
  // A callback: every API request passes here, and nearly all go on at once.
  app.addHook('onRequest', (_request, reply, done) => {
    const refusal = shed.anyone(reply)
    if (refusal === undefined) done()
    else sendError(reply, refusal)
  })
}, { name: 'shed', dependencies: ['errors'] })
