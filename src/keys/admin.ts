// Issuing, listing and revoking API keys: what the `petstore keys` command
// does, as plain functions over the storage, so tests call them directly.
import type { ApiKeyRecord, Storage } from '../db/storage.js'
import type { Environment, Plan } from '../domain.js'
import { limitsFor, type Limits } from '../limits/plans.js'
import { generateToken, hashToken } from './tokens.js'

export interface KeyView {
  id: number
  name: string
  plan: Plan
  perMinute: number
  perDay: number
  environment: Environment
  created: string
  revoked: boolean
  revokedAt: string | null
}

export interface IssueKeyInput {
  plan: Plan
  name: string
  perMinute: number | undefined
  perDay: number | undefined
  environment: Environment
  now: number
}

export async function issueKey (storage: Storage, input: IssueKeyInput): Promise<KeyView & { token: string }> {
  if (input.plan === 'enterprise' && (input.perMinute === undefined || input.perDay === undefined)) {
    throw new Error('an enterprise key needs --per-minute and --per-day')
  }
  const token = generateToken(input.environment)
  const record = await storage.createApiKey({
    name: input.name,
    plan: input.plan,
    perMinute: input.perMinute ?? null,
    perDay: input.perDay ?? null,
    environment: input.environment,
    tokenHash: hashToken(token),
    createdAt: input.now
  })
  return { ...view(record), token }
}

export async function listKeys (storage: Storage): Promise<KeyView[]> {
  return (await storage.listApiKeys()).map(view)
}

function view (key: ApiKeyRecord): KeyView {
  const limits: Limits = limitsFor(key.plan, key)
  return {
    id: key.id,
    name: key.name,
    plan: key.plan,
    perMinute: limits.perMinute,
    perDay: limits.perDay,
    environment: key.environment,
    created: new Date(key.createdAt).toISOString(),
    revoked: key.revokedAt !== null,
    revokedAt: key.revokedAt === null ? null : new Date(key.revokedAt).toISOString()
  }
}
