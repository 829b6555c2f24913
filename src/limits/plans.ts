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
