// The rate-limit contract. A store decides and charges in one atomic step;
// the in-process store and the Redis store implement it alike, and one test
// suite runs against each. Nothing here knows about HTTP.

export type WindowName = 'minute' | 'day'

export const WINDOW_MS: Record<WindowName, number> = {
  minute: 60_000,
  day: 86_400_000
}

export interface WindowLimit {
  window: WindowName
  limit: number
}

export interface BanPolicy {
  /** Refused requests inside one UTC minute that earn a ban. */
  threshold: number
  /** How long a ban lasts, from the refusal that earned it. */
  seconds: number
}

export interface HitRequest {
  /** Who is limited: `key:ID` or `addr:ADDRESS`. */
  subject: string
  windows: readonly WindowLimit[]
  ban: BanPolicy | undefined
}

export interface WindowState {
  window: WindowName
  limit: number
  /** Requests left in this window after this one. */
  remaining: number
  /** Unix milliseconds at which this window resets. */
  resetAt: number
}

export type Decision =
  | { outcome: 'allowed', windows: WindowState[] }
  | { outcome: 'limited', windows: WindowState[] }
  | { outcome: 'banned', windows: WindowState[], bannedUntil: number }

export interface RateLimitStore {
  readonly name: string
  /** Checks every window and, only when all have room, charges one unit to each. */
  hit (request: HitRequest, now: number): Promise<Decision>
  ping (): Promise<void>
  close (): Promise<void>
}

/** Start of the fixed UTC window that contains `now`. Unix time has no leap seconds, so days align to UTC midnight. */
export function windowStart (window: WindowName, now: number): number {
  return now - (now % WINDOW_MS[window])
}
