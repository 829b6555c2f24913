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

/** What a key may do (docs/KEYS.md): each operation needs one. */
export const SCOPES = ['pets:read', 'pets:write'] as const
export type Scope = typeof SCOPES[number]

/** The known scopes among those given, once each, in SCOPES order: how a key's scopes are kept and shown. */
export function inScopeOrder (given: readonly string[]): Scope[] {
  return SCOPES.filter((scope) => given.includes(scope))
}
