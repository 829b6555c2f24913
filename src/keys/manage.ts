// The life of an API key (docs/KEYS.md: The admin API): issuing, reading,
// changing, rolling, revoking and tracing keys, as plain functions over the
// storage. The `petstore keys` commands and the admin API call these and
// nothing else: one implementation, two doors. Each rule is checked here,
// so both doors refuse the same things with the same words.
import type { ApiKeyChanges, ApiKeyRecord, EventOf, KeyLeakRecord, KeyStore, LeakStore, UsageStore } from '../db/storage.js'
import { MAX_CONCURRENCY, MAX_OVERLAP_SECONDS, MAX_USAGE_DAYS, SCOPES, inScopeOrder, type Environment, type EventType, type MatchedToken, type Plan, type Scope } from '../domain.js'
import { DAY_MS, INSTANT_RANGE, isWritableInstant, readInstant, writableInstant } from '../instant.js'
import { concurrencyFor, limitsFor } from '../limits/plans.js'
import { generateToken, hashToken, inspectToken, tokenHint } from './tokens.js'

/** A key as operators see it; times are RFC 3339 strings in UTC. */
export interface KeyView {
  id: number
  name: string
  plan: Plan
  perMinute: number
  perDay: number
  /** Requests in flight at once: the key's own cap, else its plan's. */
  concurrency: number
  scopes: Scope[]
  environment: Environment
  tokenHint: string
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
  revoked: boolean
  revokedAt: string | null
  /** While a roll's overlap runs, when the token before the current one stops working; else null. */
  previousTokenExpiresAt: string | null
  /** The first report of one of its tokens found in public, or given up by its holder; null: none (docs/KEYS.md: Leaked tokens). */
  leak: LeakView | null
}

/** Where and when a key's token was found, and by which report. */
interface LeakView {
  reportedAt: string
  /** `github:` and the SHA-256 of the report's bytes, or `holder`. */
  report: string
  url: string | null
  source: string | null
}

/** What the functions that show a key read: the key, and its leaks. */
type Keys = KeyStore & LeakStore

/** A key with its token, shown once, in the answer that made it. */
export type KeyWithToken = KeyView & { token: string }

/**
 * A request that breaks a rule of keys. `field` names the input as the
 * admin API has it: a key's fields are in the body, what to read (`from`,
 * `to`, `cursor`) in the query; the CLI names the option instead.
 */
export class KeyRuleError extends Error {
  override name = 'KeyRuleError'
  constructor (readonly field: string, readonly reason: string, readonly where: 'body' | 'query' = 'body') {
    super(`${field} ${reason}`)
  }
}

// The messages below are the words of both doors: the admin API answers them, the CLI prints them.

/** A revoked key can be read, never changed or rolled: revoking is final. */
export class KeyRevokedError extends Error {
  override name = 'KeyRevokedError'
  constructor (readonly id: number) {
    super(`The API key ${id} is revoked: it can be read, never changed or rolled.`)
  }
}

/** No key has this id: what every function here given an id throws, so both doors answer a missing key alike. */
export class NoSuchKeyError extends Error {
  override name = 'NoSuchKeyError'
  constructor (readonly id: number) {
    super(`No API key has the id ${id}.`)
  }
}

export class UnknownTokenError extends Error {
  override name = 'UnknownTokenError'
  constructor () {
    super('No API key was ever given this token.')
  }
}

export interface IssueKeyInput {
  plan: Plan
  name: string
  perMinute: number | undefined
  perDay: number | undefined
  /** Requests in flight at once; default: the plan's. */
  concurrency?: number
  /** Default: every scope. */
  scopes?: readonly Scope[]
  /** Epoch milliseconds, after `now`; default: never. */
  expiresAt?: number | null
  environment: Environment
  now: number
}

/** Refuses a key to issue that breaks a rule (KeyRuleError): what issueKey checks, for a door to check before it opens the storage. */
export function checkNewKey (input: Omit<IssueKeyInput, 'name' | 'environment'>): void {
  const scopes = inScopeOrder(input.scopes ?? SCOPES)
  checkRules({ plan: input.plan, perMinute: input.perMinute ?? null, perDay: input.perDay ?? null, concurrency: input.concurrency ?? null, scopes, expiresAt: input.expiresAt ?? null }, input.now)
}

export async function issueKey (storage: KeyStore, input: IssueKeyInput): Promise<KeyWithToken> {
  checkNewKey(input)
  const scopes = inScopeOrder(input.scopes ?? SCOPES)
  const expiresAt = input.expiresAt ?? null
  const token = generateToken(input.environment)
  const record = await storage.createApiKey({
    name: input.name,
    plan: input.plan,
    perMinute: input.perMinute ?? null,
    perDay: input.perDay ?? null,
    concurrency: input.concurrency ?? null,
    environment: input.environment,
    scopes,
    tokenHash: hashToken(token),
    tokenHint: tokenHint(token),
    createdAt: input.now,
    expiresAt
  }, announce('key.created', input.now))
  return { ...view(record, input.now), token }
}

/** Keys by id, from the one after `afterId`, at most `limit` (default: all). */
export async function listKeys (storage: Keys, now: number, page: { afterId?: number, limit?: number } = {}): Promise<KeyView[]> {
  return await viewAll(storage, await storage.listApiKeys(page.afterId, page.limit), now)
}

/** One key, revoked or expired ones too. */
export async function showKey (storage: Keys, id: number, now: number): Promise<KeyView> {
  return await viewOne(storage, found(id, await storage.getApiKey(id)), now)
}

/** What an operator may change on a key; a field left out keeps its value. */
export interface KeyUpdate {
  name?: string
  plan?: Plan
  /** Null: back to the plan's. */
  perMinute?: number | null
  perDay?: number | null
  /** Null: back to the plan's, which then follows the key's plan. */
  concurrency?: number | null
  scopes?: readonly Scope[]
  /** Null: never expires. */
  expiresAt?: number | null
}

/** Changes a key, checking the rules on the key as it will be. */
export async function updateKey (storage: Keys, id: number, update: KeyUpdate, now: number): Promise<KeyView> {
  const changed = await storage.changeApiKey(id, (key) => {
    if (key.revokedAt !== null) throw new KeyRevokedError(key.id)
    // A field present but undefined is left out, as the type says: spread as it is, it would hide the stored value from the rules.
    const { scopes, ...rest } = Object.fromEntries(Object.entries(update).filter(([, value]) => value !== undefined)) as KeyUpdate
    const changes: ApiKeyChanges = { ...rest, ...(scopes === undefined ? {} : { scopes: inScopeOrder(scopes) }) }
    const after = { ...key, ...changes }
    // An expiry already set may have passed; only a new one must lie ahead.
    checkRules({ ...after, expiresAt: update.expiresAt === undefined ? null : after.expiresAt }, now)
    return changes
  }, announce('key.updated', now))
  return await viewOne(storage, found(id, changed), now)
}

/**
 * Gives a key a new token. The current one keeps working for
 * `expireCurrentInSeconds` (0: it stops at once); a previous token still
 * in its overlap stops at once. Same key: same id, limits, counters, ban.
 */
export async function rollKey (storage: Keys, id: number, expireCurrentInSeconds: number, now: number): Promise<KeyWithToken> {
  checkOverlap(expireCurrentInSeconds)
  // Made by the change, which runs whenever the key exists.
  let token = ''
  const rolled = await storage.changeApiKey(id, (key) => {
    if (key.revokedAt !== null) throw new KeyRevokedError(key.id)
    token = generateToken(key.environment)
    return {
      token: {
        hash: hashToken(token),
        hint: tokenHint(token),
        previousValidUntil: expireCurrentInSeconds === 0 ? null : now + expireCurrentInSeconds * 1000
      }
    }
  }, announce('key.rolled', now))
  return { ...await viewOne(storage, found(id, rolled), now), token }
}

/** Refuses an overlap a roll may not give (KeyRuleError): 0 to 7 days, in whole seconds. */
export function checkOverlap (expireCurrentInSeconds: number): void {
  if (!Number.isSafeInteger(expireCurrentInSeconds) || expireCurrentInSeconds < 0 || expireCurrentInSeconds > MAX_OVERLAP_SECONDS) {
    throw new KeyRuleError('expireCurrentInSeconds', `must be at most 7 days (${MAX_OVERLAP_SECONDS} seconds), in whole seconds from 0`)
  }
}

/** Revokes a key, both its tokens; a key revoked before stays as it was. */
export async function revokeKey (storage: Keys, id: number, now: number): Promise<KeyView> {
  const key = await storage.changeApiKey(id, (current) => current.revokedAt === null ? { revokedAt: now } : {}, announce('key.revoked', now))
  return await viewOne(storage, found(id, key), now)
}

/**
 * Revokes a key because one of its tokens leaked, as `revokeKey` does, and
 * announces `key.leaked` beside `key.revoked`, both in the revocation's
 * transaction and both showing the key with this leak: what revoked it, even
 * where an earlier report's revocation had failed. A key revoked before
 * stays as it was and announces nothing.
 */
export async function revokeLeakedKey (storage: Keys, leak: KeyLeakRecord, now: number): Promise<KeyView> {
  const key = await storage.changeApiKey(leak.keyId, (current) => current.revokedAt === null ? { revokedAt: now } : {}, (record) => {
    const data = JSON.stringify(view(record, now, leak))
    return [{ type: 'key.revoked', createdAt: now, data }, { type: 'key.leaked', createdAt: now, data }]
  })
  return await viewOne(storage, found(leak.keyId, key), now)
}

/** A key found by a token, and which of its tokens that is. */
export interface FoundKey {
  key: KeyView
  matchedToken: MatchedToken
}

/**
 * The key a token belongs to, in any state, by its current, previous or any
 * earlier token, since a secret-scanning alert may come after a roll. Throws
 * UnknownTokenError for a token no key was ever given, or not a petstore token.
 */
export async function findKey (storage: Keys, token: string, now: number): Promise<FoundKey> {
  if (!inspectToken(token).ok) throw new UnknownTokenError()
  const hash = hashToken(token)
  const match = await storage.findApiKeyByTokenHash(hash)
  if (match !== undefined) {
    const key = await viewOne(storage, match.key, now)
    if (!match.previous) return { key, matchedToken: 'current' }
    // The view shows the overlap only while the previous token is accepted.
    if (key.previousTokenExpiresAt !== null) return { key, matchedToken: 'previous' }
  }
  const key = match?.key ?? await storage.findApiKeyByIssuedToken(hash)
  if (key === undefined) throw new UnknownTokenError()
  return { key: await viewOne(storage, key, now), matchedToken: 'former' }
}

/** One UTC day of a key's requests. */
export interface DayUsage {
  /** `YYYY-MM-DD`, UTC. */
  date: string
  admitted: number
  refused: number
}

/** The days a usage report covers when none are given, today included. */
const DEFAULT_USAGE_DAYS = 30

/**
 * A key's requests per UTC day, from `from` to `to` (`YYYY-MM-DD`, both
 * included; default: the last 30 days, today included), one row per day,
 * zeros included, oldest first. What instances counted in the last few
 * seconds is not in it yet (keys/usage.ts).
 */
export async function keyUsage (storage: KeyStore & UsageStore, id: number, range: { from?: string, to?: string }, now: number): Promise<DayUsage[]> {
  const { from, to } = usageSpan(range, now)
  found(id, await storage.getApiKey(id))
  return everyDay(from, to, await storage.usageOf(id, from, to))
}

/** The days a usage report covers, as days since 1970-01-01: `range`'s, or the last 30 days. */
export function usageSpan (range: { from?: string, to?: string }, now: number): { from: number, to: number } {
  const today = Math.floor(now / DAY_MS)
  const to = range.to === undefined ? today : dayOf('to', range.to)
  const from = range.from === undefined ? to - DEFAULT_USAGE_DAYS + 1 : dayOf('from', range.from)
  if (from > to) throw new KeyRuleError('from', 'must not be after the last day', 'query')
  if (to - from + 1 > MAX_USAGE_DAYS) throw new KeyRuleError('from', `must be at most ${MAX_USAGE_DAYS} days before the last day`, 'query')
  return { from, to }
}

/** One row per day from `from` to `to`, zeros where nothing is stored, oldest first. */
export function everyDay (from: number, to: number, stored: ReadonlyArray<{ day: number, admitted: number, refused: number }>): DayUsage[] {
  const byDay = new Map(stored.map((row) => [row.day, row]))
  const days: DayUsage[] = []
  for (let day = from; day <= to; day++) {
    const row = byDay.get(day)
    days.push({ date: new Date(day * DAY_MS).toISOString().slice(0, 10), admitted: row?.admitted ?? 0, refused: row?.refused ?? 0 })
  }
  return days
}

/** A `YYYY-MM-DD` date that exists, as days since 1970-01-01. */
function dayOf (field: string, text: string): number {
  const reading = readInstant(text, 'date')
  if (!reading.ok) throw new KeyRuleError(field, 'must be a date that exists, as YYYY-MM-DD', 'query')
  return reading.at / DAY_MS
}

/** A key's event, written with its change (docs/WEBHOOKS.md): its data is the key as operators see it, never a token or a hash. */
function announce (type: EventType, now: number): EventOf<ApiKeyRecord> {
  return (key) => ({ type, createdAt: now, data: JSON.stringify(view(key, now)) })
}

/** The key the storage found by `id`; NoSuchKeyError where it found none. */
function found (id: number, key: ApiKeyRecord | undefined): ApiKeyRecord {
  if (key === undefined) throw new NoSuchKeyError(id)
  return key
}

/** The rules every key keeps, whichever door made or changed it. */
function checkRules (key: { plan: Plan, perMinute: number | null, perDay: number | null, concurrency: number | null, scopes: readonly Scope[], expiresAt: number | null }, now: number): void {
  if (key.plan === 'enterprise' && (key.perMinute === null || key.perDay === null)) {
    throw new KeyRuleError(key.perMinute === null ? 'perMinute' : 'perDay', 'is required for an enterprise key (with perDay and perMinute)')
  }
  if (key.concurrency !== null) checkConcurrency(key.concurrency)
  if (key.scopes.length === 0) throw new KeyRuleError('scopes', `must name at least one of ${SCOPES.join(', ')}`)
  if (key.expiresAt !== null) checkExpiry(key.expiresAt, now)
}

/** Refuses a cap of requests in flight to give a key (KeyRuleError): a whole number from 1 to MAX_CONCURRENCY. */
export function checkConcurrency (concurrency: number): void {
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new KeyRuleError('concurrency', `must be an integer from 1 to ${MAX_CONCURRENCY}`)
  }
}

/** Refuses an expiry to give a key (KeyRuleError): it must lie ahead, and be one every answer can write. */
export function checkExpiry (expiresAt: number, now: number): void {
  if (expiresAt <= now) throw new KeyRuleError('expiresAt', 'must be in the future')
  // Stored, it would be written by every answer that shows the key: one no answer can write would break them all.
  if (!isWritableInstant(expiresAt)) throw new KeyRuleError('expiresAt', INSTANT_RANGE)
}

/**
 * Stored keys as operators see them at `now`, each with its first leak:
 * one query for the leaks however many keys. Every key is asked about, the
 * live ones too: a leak is recorded before its key is revoked, and a
 * revocation that failed leaves a live key with a leak until the report
 * comes again (keys/leaks.ts).
 */
export async function viewAll (storage: LeakStore, keys: readonly ApiKeyRecord[], now: number): Promise<KeyView[]> {
  const leaks = keys.length === 0 ? [] : await storage.firstKeyLeaks(keys.map((key) => key.id))
  const byKey = new Map(leaks.map((leak) => [leak.keyId, leak]))
  return keys.map((key) => view(key, now, byKey.get(key.id)))
}

async function viewOne (storage: LeakStore, key: ApiKeyRecord, now: number): Promise<KeyView> {
  const [leak] = await storage.firstKeyLeaks([key.id])
  return view(key, now, leak)
}

/** A stored key as operators see it at `now`, with its first leak if it has one. */
function view (key: ApiKeyRecord, now: number, leak?: KeyLeakRecord): KeyView {
  const limits = limitsFor(key.plan, key)
  const overlap = key.revokedAt === null && key.previousTokenExpiresAt !== null && key.previousTokenExpiresAt > now ? key.previousTokenExpiresAt : null
  return {
    id: key.id,
    name: key.name,
    plan: key.plan,
    perMinute: limits.perMinute,
    perDay: limits.perDay,
    concurrency: concurrencyFor(key.plan, key),
    scopes: key.scopes,
    environment: key.environment,
    tokenHint: key.tokenHint,
    createdAt: time(key.createdAt),
    expiresAt: key.expiresAt === null ? null : time(key.expiresAt),
    lastUsedAt: key.lastUsedAt === null ? null : time(key.lastUsedAt),
    revoked: key.revokedAt !== null,
    revokedAt: key.revokedAt === null ? null : time(key.revokedAt),
    previousTokenExpiresAt: overlap === null ? null : time(overlap),
    leak: leak === undefined ? null : { reportedAt: time(leak.foundAt), report: leak.report, url: leak.url, source: leak.source }
  }
}

/** A key stored before its expiry was checked for this may hold one no answer can write: it is shown at the nearest one that can be. */
function time (ms: number): string {
  return new Date(writableInstant(ms)).toISOString()
}
