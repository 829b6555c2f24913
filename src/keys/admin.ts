// Issuing, listing and revoking API keys: what the `petstore keys` command
// does, as plain functions over the storage, so tests call them directly.
import type { ApiKeyRecord, Storage } from '../db/storage.js'
import { SCOPES, inScopeOrder, type Environment, type Plan, type Scope } from '../domain.js'
import { limitsFor, type Limits } from '../limits/plans.js'
import { generateToken, hashToken, tokenHint } from './tokens.js'

/** A key as operators see it; times are RFC 3339 strings in UTC. */
export interface KeyView {
  id: number
  name: string
  plan: Plan
  perMinute: number
  perDay: number
  scopes: Scope[]
  environment: Environment
  tokenHint: string
  created: string
  expiresAt: string | null
  lastUsedAt: string | null
  revoked: boolean
  revokedAt: string | null
}

export interface IssueKeyInput {
  plan: Plan
  name: string
  perMinute: number | undefined
  perDay: number | undefined
  /** Default: every scope. */
  scopes?: readonly Scope[]
  /** Epoch milliseconds, after `now`; default: never. */
  expiresAt?: number | null
  environment: Environment
  now: number
}

export async function issueKey (storage: Storage, input: IssueKeyInput): Promise<KeyView & { token: string }> {
  if (input.plan === 'enterprise' && (input.perMinute === undefined || input.perDay === undefined)) {
    throw new Error('an enterprise key needs --per-minute and --per-day')
  }
  const scopes = inScopeOrder(input.scopes ?? SCOPES)
  if (scopes.length === 0) throw new Error('a key needs at least one scope')
  const expiresAt = input.expiresAt ?? null
  if (expiresAt !== null && expiresAt <= input.now) throw new Error('a key cannot expire in the past')
  const token = generateToken(input.environment)
  const record = await storage.createApiKey({
    name: input.name,
    plan: input.plan,
    perMinute: input.perMinute ?? null,
    perDay: input.perDay ?? null,
    environment: input.environment,
    scopes,
    tokenHash: hashToken(token),
    tokenHint: tokenHint(token),
    createdAt: input.now,
    expiresAt
  })
  return { ...view(record), token }
}

export async function listKeys (storage: Storage): Promise<KeyView[]> {
  return (await storage.listApiKeys()).map(view)
}

/** One key, revoked or expired ones too; undefined when no key has this id. */
export async function showKey (storage: Storage, id: number): Promise<KeyView | undefined> {
  const key = await storage.getApiKey(id)
  return key === undefined ? undefined : view(key)
}

function view (key: ApiKeyRecord): KeyView {
  const limits: Limits = limitsFor(key.plan, key)
  return {
    id: key.id,
    name: key.name,
    plan: key.plan,
    perMinute: limits.perMinute,
    perDay: limits.perDay,
    scopes: key.scopes,
    environment: key.environment,
    tokenHint: key.tokenHint,
    created: new Date(key.createdAt).toISOString(),
    expiresAt: time(key.expiresAt),
    lastUsedAt: time(key.lastUsedAt),
    revoked: key.revokedAt !== null,
    revokedAt: time(key.revokedAt)
  }
}

function time (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
