// The plans (docs/KEYS.md) and their limits. Enterprise limits are set per key.

import type { Plan } from '../domain.js'

export interface Limits {
  perMinute: number
  perDay: number
}

const PLAN_LIMITS: Record<Exclude<Plan, 'enterprise'>, Limits> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 }
}

/** Requests in flight at once per key, by plan (docs/API.md: Requests in flight). */
const PLAN_CONCURRENCY: Record<Plan, number> = { free: 5, pro: 25, business: 100, enterprise: 100 }

/**
 * How long a request over its key's cap waits for a slot before its 429:
 * long enough to ride out a burst's tail, short enough that a client looping
 * on many connections is slowed rather than served.
 */
export const CONCURRENCY_WAIT_MS = 250

/** The requests a key may have in flight at once: its own cap where set, else its plan's. */
export function concurrencyFor (plan: Plan, own: { concurrency: number | null }): number {
  return own.concurrency ?? PLAN_CONCURRENCY[plan]
}

/** Requests without a valid key are limited per client address, by the minute only. */
export const ANONYMOUS_PER_MINUTE = 60

/** The limits of a key: its own where set, else its plan's. */
export function limitsFor (plan: Plan, own: { perMinute: number | null, perDay: number | null }): Limits {
  const base = plan === 'enterprise' ? undefined : PLAN_LIMITS[plan]
  const perMinute = own.perMinute ?? base?.perMinute
  const perDay = own.perDay ?? base?.perDay
  if (perMinute === undefined || perDay === undefined) {
    throw new Error(`a ${plan} key needs its own per-minute and per-day limits`)
  }
  return { perMinute, perDay }
}
