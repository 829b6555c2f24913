// Instants and days, read one way by the admin API's schemas, the `petstore keys`
// options and usage reports. Answers write RFC 3339 in UTC with a four-digit year
// (Date#toISOString), so an instant is accepted only if its UTC year is 0100 to 9999:
// an offset can push a year-9999 time into 10000, which no answer could write.

/** A UTC day in milliseconds: usage is counted per UTC day. */
export const DAY_MS = 86_400_000

/** What `readInstant` accepts: RFC 3339 §5.6 date-time; also a bare date or a space for the `T`; or a bare date alone. */
const FORMS = {
  time: /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/,
  timeOrDate: /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2}))?$/,
  date: /^(\d{4})-(\d{2})-(\d{2})$/
} as const

/** The first and last instants an answer can write. */
const EARLIEST_INSTANT = Date.UTC(100, 0, 1)
const LATEST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

export const INSTANT_FORMAT = 'must be an RFC 3339 time that exists, e.g. 2027-03-10T12:00:00Z'
export const INSTANT_RANGE = 'must lie between 0100-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z'

export type InstantReading = { ok: true, at: number } | { ok: false, reason: string }

/**
 * The instant `text` names, in Unix milliseconds (fractions past the
 * millisecond dropped), or why it names none. A bare date `2027-03-10`
 * (form `timeOrDate` or `date`) is its first instant, UTC.
 */
export function readInstant (text: string, form: keyof typeof FORMS = 'time'): InstantReading {
  const match = FORMS[form].exec(text)
  if (match === null) return { ok: false, reason: INSTANT_FORMAT }
  const [year, month, day] = match.slice(1, 4).map(Number) as [number, number, number]
  // A bare date has no groups past the day: its time is midnight.
  const [hour, minute, second] = [4, 5, 6].map((group) => Number(match[group] ?? 0)) as [number, number, number]
  // Date.UTC maps years 0-99 to 1900-1999 and rolls 30 February into March: set and read back.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return { ok: false, reason: INSTANT_FORMAT }
  }
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, reason: INSTANT_FORMAT }
  const offset = offsetMinutes(match[8])
  if (offset === undefined) return { ok: false, reason: INSTANT_FORMAT }
  const millis = Number((match[7] ?? '0').padEnd(3, '0').slice(0, 3))
  const at = date.getTime() + ((hour * 60 + minute - offset) * 60 + second) * 1000 + millis
  if (at < EARLIEST_INSTANT || at > LATEST_INSTANT) return { ok: false, reason: INSTANT_RANGE }
  return { ok: true, at }
}

/** Whether an answer can write `at` as RFC 3339 in UTC with a four-digit year. */
export function isWritableInstant (at: number): boolean {
  return Number.isFinite(at) && at >= EARLIEST_INSTANT && at <= LATEST_INSTANT
}

/** `at`, or the nearest instant an answer can write. */
export function writableInstant (at: number): number {
  return Math.min(Math.max(at, EARLIEST_INSTANT), LATEST_INSTANT)
}

/** `Z`, `+02:00`, `-23:59` in minutes east of UTC; undefined past 23:59; 0 for a bare date. */
function offsetMinutes (zone: string | undefined): number | undefined {
  if (zone === undefined || zone.toUpperCase() === 'Z') return 0
  const hours = Number(zone.slice(1, 3))
  const minutes = Number(zone.slice(4, 6))
  if (hours > 23 || minutes > 59) return undefined
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes)
}
