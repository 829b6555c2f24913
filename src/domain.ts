// The service's own vocabulary, shared by every layer: storage, limits,
// keys, configuration and schemas import it, and it imports nothing.

/** Which keys an instance accepts, and which of the two addresses it is. */
export const ENVIRONMENTS = ['production', 'staging'] as const
export type Environment = typeof ENVIRONMENTS[number]

/** The plans (docs/KEYS.md); their limits are in limits/plans.ts. */
export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const
export type Plan = typeof PLANS[number]

/** An animal's availability. */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = typeof PET_STATUSES[number]

/** A page of animals: its size when `limit` is not given, and the largest `limit`. */
export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

/** What a key may do (docs/KEYS.md): each operation needs one. */
export const SCOPES = ['pets:read', 'pets:write'] as const
export type Scope = typeof SCOPES[number]

/** The states a key is listed in, at an instant: revoked, else expired once its `expiresAt` has passed, else active. */
export const KEY_STATES = ['active', 'expired', 'revoked'] as const
export type KeyState = typeof KEY_STATES[number]
/** The orders keys are listed in: by id, or by last use. */
export const KEY_SORTS = ['id', 'lastUsed'] as const
export type KeySort = typeof KEY_SORTS[number]

/**
 * Which of its tokens a key was found by: its current one; the one before
 * it, while a roll's overlap runs; or one it no longer accepts, rolled away
 * from (or whose overlap ended when the key was revoked).
 */
export const MATCHED_TOKENS = ['current', 'previous', 'former'] as const
export type MatchedToken = typeof MATCHED_TOKENS[number]

/** The longest overlap a roll may give the token it replaces: 7 days. */
export const MAX_OVERLAP_SECONDS = 604_800
/** The overlap the console offers first when rolling: a day, time enough to deploy the new token. */
export const DEFAULT_OVERLAP_SECONDS = 86_400
/** The overlaps the console offers, longest last; 0 (at once) only when chosen on purpose. */
export const SUGGESTED_OVERLAPS = [3_600, DEFAULT_OVERLAP_SECONDS, 3 * 86_400, MAX_OVERLAP_SECONDS, 0]

/**
 * The largest cap of requests in flight a key may be given its own
 * (docs/API.md: Requests in flight); the plans' caps are in limits/plans.ts.
 * Far more than one instance serves at once: a larger cap would hold nothing back.
 */
export const MAX_CONCURRENCY = 10_000

/** The most days one usage report covers. */
export const MAX_USAGE_DAYS = 366

/** The rate-limit windows a key is counted in (docs/API.md: Rate limits), and their lengths. */
export type WindowName = 'minute' | 'day'
export const WINDOW_MS: Record<WindowName, number> = {
  minute: 60_000,
  day: 86_400_000
}

/** The keys listed per deprecated operation, most calls first: an answer of bounded size however many keys call. */
export const MAX_CALLERS = 10_000

/** The known scopes among those given, once each, in SCOPES order: how a key's scopes are kept and shown. */
export function inScopeOrder (given: readonly string[]): Scope[] {
  return SCOPES.filter((scope) => given.includes(scope))
}

/** The events announced to webhook endpoints (docs/WEBHOOKS.md); an endpoint may ask for any of them before the service emits it. */
export const EVENT_TYPES = [
  'pet.created', 'key.created', 'key.updated', 'key.rolled', 'key.revoked', 'key.expiring', 'key.expired',
  'quota.warning', 'quota.exhausted', 'key.leaked'
] as const
export type EventType = typeof EVENT_TYPES[number]
/** The event an operator sends to one endpoint to try it (docs/WEBHOOKS.md): no endpoint subscribes to it, and no change emits it. */
export const TEST_EVENT_TYPE = 'webhook.test'
