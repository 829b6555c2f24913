// The rows both backends read, column for column (the same schema, and
// every integer read as bigint), and the records they become.
import type { Environment, PetStatus, Plan } from '../domain.js'
import type { ApiKeyRecord, PetRecord } from './storage.js'

export interface PetRow { id: bigint, name: string, category_id: bigint, status: PetStatus }

export interface ApiKeyRow {
  id: bigint
  name: string
  plan: Plan
  per_minute: bigint | null
  per_day: bigint | null
  environment: Environment
  created_at: bigint
  revoked_at: bigint | null
}

export function toPet (row: PetRow): PetRecord {
  return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }
}

export function toApiKey (row: ApiKeyRow): ApiKeyRecord {
  return {
    id: Number(row.id),
    name: row.name,
    plan: row.plan,
    perMinute: row.per_minute === null ? null : Number(row.per_minute),
    perDay: row.per_day === null ? null : Number(row.per_day),
    environment: row.environment,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at)
  }
}
