// The deprecated operations and their brownouts (docs/API.md: The deprecated
// operation). Each route takes its deprecation from here, and the deprecation
// plugin refuses to build a route marked deprecated otherwise, so what the
// admin API and the CLI list is what the routes do. Nothing here knows HTTP:
// the CLI reads it without loading the web framework.
import { readInstant } from './instant.js'

export interface Deprecation {
  /** The route's operationId, as the OpenAPI document names it. */
  operationId: string
  /** When the deprecation was announced. */
  since: Date
  /** When the operation stops working. */
  sunset: Date
  /** The operation to use instead, relative to the base address. */
  successor: string
}

/** Announced 2026-11-20; removed 2030-12-05. */
export const GET_PET_DEPRECATION: Deprecation = Object.freeze({
  operationId: 'getPet',
  since: new Date('2026-11-20T00:00:00Z'),
  sunset: new Date('2030-12-05T00:00:00Z'),
  successor: '/pets'
})

/** Every deprecated operation, oldest sunset first. */
export const DEPRECATED_OPERATIONS: readonly Deprecation[] = Object.freeze([GET_PET_DEPRECATION])

/**
 * A time during which every deprecated operation answers as after its
 * sunset, from `start` (included) to `end` (excluded), in Unix milliseconds;
 * `text` is the interval as the operator wrote it.
 */
export interface Brownout {
  start: number
  end: number
  text: string
}

/** More than anyone schedules; a longer list is a mistake, and each request scans it. */
export const MAX_BROWNOUTS = 100

export type BrownoutsReading = { ok: true, brownouts: Brownout[] } | { ok: false, reason: string }

/**
 * DEPRECATION_BROWNOUTS: comma-separated ISO 8601 intervals `START/END`,
 * each end an RFC 3339 time in UTC (`Z`). Refused: an end that does not
 * parse or is not UTC, an end not after its start, two intervals that
 * overlap (touching is allowed). Sorted by start.
 */
export function readBrownouts (text: string): BrownoutsReading {
  const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '')
  if (items.length > MAX_BROWNOUTS) return { ok: false, reason: `has ${items.length} intervals, more than ${MAX_BROWNOUTS}` }
  const brownouts: Brownout[] = []
  for (const item of items) {
    const ends = item.split('/')
    if (ends.length !== 2) return { ok: false, reason: `"${item}" is not an interval START/END, e.g. 2030-06-01T14:00:00Z/2030-06-01T15:00:00Z` }
    const [start, end] = ends.map((end) => readEnd(item, end ?? '')) as [number | string, number | string]
    if (typeof start === 'string') return { ok: false, reason: start }
    if (typeof end === 'string') return { ok: false, reason: end }
    if (end <= start) return { ok: false, reason: `"${item}" ends before it starts, or when it starts` }
    brownouts.push({ start, end, text: item })
  }
  brownouts.sort((a, b) => a.start - b.start)
  for (let i = 1; i < brownouts.length; i++) {
    const before = brownouts[i - 1] as Brownout
    const next = brownouts[i] as Brownout
    if (next.start < before.end) return { ok: false, reason: `"${before.text}" and "${next.text}" overlap` }
  }
  return { ok: true, brownouts }
}

/** An end of an interval in Unix milliseconds, or why it is not one. */
function readEnd (item: string, end: string): number | string {
  const reading = readInstant(end)
  if (!reading.ok) return `"${end}" in "${item}" ${reading.reason}`
  if (!/[Zz]$/.test(end)) return `"${end}" in "${item}" is not in UTC: write it with Z`
  return reading.at
}

/** The brownout under way at `now`, if any. */
export function brownoutAt (brownouts: readonly Brownout[], now: number): Brownout | undefined {
  for (const brownout of brownouts) {
    if (now < brownout.start) return undefined
    if (now < brownout.end) return brownout
  }
  return undefined
}
