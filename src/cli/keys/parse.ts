// The `petstore keys` command line read into values: each parser refuses
// input that is malformed (commander makes it bad usage, status 2). The
// rules of keys are not checked here but in keys/manage.ts, for both doors.
import { InvalidArgumentError } from 'commander'
import { SCOPES, type KeySort, type KeyState, type Plan, type Scope } from '../../domain.js'
import type { KeyUpdate } from '../../keys/manage.js'
import { INSTANT_FORMAT, readInstant } from '../../instant.js'

export function positiveInteger (value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer')
  return Number(value)
}

/** `pets:read,pets:write`: each one a known scope. */
export function scopeList (value: string): Scope[] {
  const named = value.split(',').map((scope) => scope.trim())
  const unknown = named.find((scope) => !(SCOPES as readonly string[]).includes(scope))
  if (unknown !== undefined) throw new InvalidArgumentError(`unknown scope '${unknown}'; the scopes are ${SCOPES.join(', ')}`)
  return named as Scope[]
}

/** An instant, as RFC 3339 (`2027-03-10T12:00:00Z`) or a date (`2027-03-10`: its first instant, UTC); whether it lies ahead is a rule of keys. */
export function instant (value: string): number {
  const reading = readInstant(value, 'timeOrDate')
  if (!reading.ok) {
    throw new InvalidArgumentError(reading.reason === INSTANT_FORMAT ? 'must be an RFC 3339 time (2027-03-10T12:00:00Z) or a date (2027-03-10)' : reading.reason)
  }
  return reading.at
}

const DURATION_UNITS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30m`, `12h`, `90d`: a positive number of minutes, hours or days, in milliseconds. */
export function duration (value: string): number {
  const match = /^([1-9]\d{0,5})([mhd])$/.exec(value)
  if (match === null) throw new InvalidArgumentError('must be a positive number of minutes, hours or days: 30m, 12h, 90d')
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number)
}

/** `0` (the current token stops at once) or a duration as `--expires-in` takes it, in seconds; its bound is a rule of keys. */
export function overlap (value: string): number {
  if (value === '0') return 0
  try {
    return duration(value) / 1000
  } catch {
    throw new InvalidArgumentError('must be 0 or a number of minutes, hours or days up to 7 days: 0, 30m, 12h, 7d')
  }
}

// Commander keeps an option whose parser returns null as an empty string: the words stay words until the action.

/** An instant, or `never`. */
export function instantOrNever (value: string): number | 'never' {
  return value === 'never' ? value : instant(value)
}

/** A positive integer, or `plan`: the plan's limit (or cap) again. */
export function limitOrPlan (value: string): number | 'plan' {
  if (value === 'plan') return value
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer, or `plan` for the plan\'s')
  return Number(value)
}

/** Text to search for: not empty, at most 200 characters (as the admin API's `q`). */
export function searchText (value: string): string {
  const text = value.trim()
  if (text === '' || [...text].length > 200) throw new InvalidArgumentError('must be 1 to 200 characters')
  return text
}

export interface CreateOptions {
  plan: Plan
  name?: string
  perMinute?: number
  perDay?: number
  concurrency?: number
  scopes?: Scope[]
  expiresAt?: number
  expiresIn?: number
  json?: boolean
}

export interface ListOptions {
  search?: string
  state?: KeyState
  plan?: Plan
  sort: KeySort
  /** Only the keys that called a deprecated operation lately, with their calls. */
  callsDeprecated?: boolean
  json?: boolean
}

export interface UpdateOptions {
  name?: string
  plan?: Plan
  perMinute?: number | 'plan'
  perDay?: number | 'plan'
  concurrency?: number | 'plan'
  scopes?: Scope[]
  expiresAt?: number | 'never'
  json?: boolean
}

/** The words an option may take instead of a value, as null: back to the plan's limit or cap, or no expiry. */
export function asKeyUpdate ({ json: _json, perMinute, perDay, concurrency, expiresAt, ...rest }: UpdateOptions): KeyUpdate {
  const update: KeyUpdate = { ...rest }
  if (perMinute !== undefined) update.perMinute = perMinute === 'plan' ? null : perMinute
  if (perDay !== undefined) update.perDay = perDay === 'plan' ? null : perDay
  if (concurrency !== undefined) update.concurrency = concurrency === 'plan' ? null : concurrency
  if (expiresAt !== undefined) update.expiresAt = expiresAt === 'never' ? null : expiresAt
  return update
}
