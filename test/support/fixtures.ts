// Values and factories every kind of test shares: component tests
// (support/app.ts), end-to-end tests and the benchmark (support/process.ts).
import { randomUUID } from 'node:crypto'
import type { NewApiKeyRecord, NewPetRecord } from '../../src/db/storage.js'
import type { PetStatus } from '../../src/domain.js'

/** The largest int64: the top of every id and categoryId. */
export const INT64_MAX = 9223372036854775807n
/** 2^53 + 1: the smallest integer a double cannot hold. */
export const FIRST_UNSAFE_INTEGER = 9007199254740993n
/** Where the test clock starts: 30 s into a UTC minute, so windows and bans have room on both sides. */
export const CLOCK_START = Date.parse('2027-03-10T12:00:30Z')

export function bearer (token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` }
}

/** A NewPet body as an object, for bodies that JSON.stringify can write. */
export function buildPet (overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'Rex', categoryId: 1, status: 'available', ...overrides }
}

export interface NewPetInput {
  name?: string
  /** Written into the JSON text as is, so that any int64 arrives exactly. */
  categoryId?: bigint
  status?: PetStatus
}

/** A NewPet body as JSON text; JSON.stringify cannot write a bigint, so categoryId is spliced in as its digits. */
export function newPetJson (overrides: NewPetInput = {}): string {
  const { name = 'Rex', categoryId = 1n, status } = overrides
  const fields = [`"name":${JSON.stringify(name)}`, `"categoryId":${categoryId.toString()}`]
  if (status !== undefined) fields.push(`"status":${JSON.stringify(status)}`)
  return `{${fields.join(',')}}`
}

/** An animal straight into storage: Rex, of category 1, available; a field added to the animal gets its value here. */
export function buildPetRecord (overrides: Partial<NewPetRecord> = {}): NewPetRecord {
  return { name: 'Rex', categoryId: 1n, status: 'available', ...overrides }
}

/** A key record straight into storage: a free production key with every scope, no expiry, and a hash of its own. */
export function buildKeyRecord (overrides: Partial<NewApiKeyRecord> = {}): NewApiKeyRecord {
  return {
    name: 'k',
    plan: 'free',
    perMinute: null,
    perDay: null,
    concurrency: null,
    environment: 'production',
    scopes: ['pets:read', 'pets:write'],
    tokenHash: `h-${randomUUID()}`,
    tokenHint: 'pet_live_…0000',
    createdAt: 1000,
    expiresAt: null,
    ...overrides
  }
}
