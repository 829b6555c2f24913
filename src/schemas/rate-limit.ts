// GET /v1/rate_limit's answer (docs/API.md: Rate limits): where a key stands,
// as the rate-limit headers say it, in a body a client can read at leisure.
import { Type, type Static } from './typebox.js'
import { PLANS, WINDOW_MS } from '../domain.js'
import { StringEnum } from './kinds.js'

/**
 * The items of the rate-limit headers (limits/limit.ts writes them), for the
 * OpenAPI document: one per window, one for a ban and one for a shed request;
 * and the cap of requests in flight, which has no window, in the draft's
 * quota unit for it.
 */
const ITEM_NAMES = [...Object.keys(WINDOW_MS), 'ban', 'overload'] as const
export const POLICY_ITEM_PATTERN = `(?:"(?:${ITEM_NAMES.join('|')})";q=[0-9]+;w=[0-9]+|"concurrency";q=[0-9]+;qu="concurrent-requests")`
export const STATE_ITEM_PATTERN = `(?:"(?:${ITEM_NAMES.join('|')})";r=[0-9]+;t=[0-9]+|"concurrency";r=[0-9]+)`

/** Unix seconds up to 9999-12-31. */
const UNIX_SECONDS = { minimum: 0, maximum: 253_402_300_799, format: 'int64' } as const
/** As a key's own limits can be: up to ten digits. */
const MAX_LIMIT = 9_999_999_999

export const WindowStanding = Type.Object({
  window: StringEnum(['minute', 'day'] as const, { description: 'The window: the UTC minute, or the UTC day.' }),
  limit: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, format: 'int64', description: 'Requests the key may make in this window.' }),
  remaining: Type.Integer({ minimum: 0, maximum: MAX_LIMIT, format: 'int64', description: 'Requests left in this window.' }),
  reset: Type.Integer({ ...UNIX_SECONDS, description: 'Unix time, in seconds, at which this window starts again.' })
}, { $id: 'WindowStanding', additionalProperties: false, title: 'WindowStanding', description: 'One window of a key\'s quota.' })

export const RateLimitStatus = Type.Object({
  plan: StringEnum(PLANS, { description: 'The key\'s plan.' }),
  limits: Type.Array(WindowStanding, { minItems: 2, maxItems: 2, description: 'The minute window, then the day window.' }),
  bannedUntil: Type.Union([Type.Integer({ ...UNIX_SECONDS, description: 'Unix time, in seconds, at which the ban ends.' }), Type.Null()], {
    description: 'While the key is banned, when the ban ends (Unix seconds); null otherwise.'
  })
}, {
  $id: 'RateLimitStatus',
  additionalProperties: false,
  title: 'RateLimitStatus',
  description: 'Where the key stands: its quota in each window and any ban. Asking spends none of it.'
})
export type RateLimitStatus = Static<typeof RateLimitStatus>
