// Who still calls the deprecated operations (docs/OPERATING.md: The deprecated
// operation's callers): each one, its sunset, and the keys that called it in
// the last 30 days, for the admin API, the CLI and the console alike.
import type { LeakStore, UsageStore } from '../db/storage.js'
import { DEPRECATED_OPERATIONS } from '../deprecations.js'
import { MAX_CALLERS } from '../domain.js'
import { DAY_MS } from '../instant.js'
import { viewAll, type KeyView } from './manage.js'

/** The days looked at, today included. */
export const CALLER_DAYS = 30

interface DeprecatedCallerView {
  key: KeyView
  /** Calls over the days looked at, by every instance, up to USAGE_FLUSH_MS late. */
  calls: number
  lastCall: string
}

export interface DeprecatedOperationView {
  operationId: string
  sunset: string
  /** Every key that called it, counted; `callers` lists the first MAX_CALLERS of them. */
  callerCount: number
  /** Most calls first, then by key id. */
  callers: DeprecatedCallerView[]
}

/** Every deprecated operation, in the order of DEPRECATED_OPERATIONS, with the keys that called it in the last CALLER_DAYS days. */
export async function deprecatedCallers (storage: Pick<UsageStore, 'deprecatedCallers'> & LeakStore, now: number): Promise<DeprecatedOperationView[]> {
  const today = Math.floor(now / DAY_MS)
  const rows = await storage.deprecatedCallers(today - CALLER_DAYS + 1, today)
  return await Promise.all(DEPRECATED_OPERATIONS.map(async ({ operationId, sunset }) => {
    const all = rows.filter((row) => row.operation === operationId)
    const callers = all.slice(0, MAX_CALLERS)
    const keys = await viewAll(storage, callers.map((row) => row.key), now)
    return {
      operationId,
      sunset: sunset.toISOString(),
      callerCount: all.length,
      callers: callers.map((row, i) => ({ key: keys[i] as KeyView, calls: row.calls, lastCall: new Date(row.lastCall).toISOString() }))
    }
  }))
}
