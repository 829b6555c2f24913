// Many keys at once, for the operator console and `petstore keys list`
// (docs/KEYS.md: The console): a filtered, sorted page of keys with its cursor,
// every key's requests per day, and the overview an operator opens on
// (usage, the busiest keys today, keys by state and plan, and the choices
// a key or a webhook endpoint may take). Plain functions over the storage, as keys/manage.ts.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'
import type { DayTotals, KeyStore, LeakStore, StoreConnection, UsageStore } from '../db/storage.js'
import {
  DEFAULT_OVERLAP_SECONDS, EVENT_TYPES, KEY_STATES, MAX_OVERLAP_SECONDS, PLANS, SCOPES, SUGGESTED_OVERLAPS, type EventType, type KeySort, type KeyState, type Plan, type Scope
} from '../domain.js'
import { DAY_MS } from '../instant.js'
import { limitsFor } from '../limits/plans.js'
import { KeyRuleError, everyDay, usageSpan, viewAll, type DayUsage, type KeyView } from './manage.js'

/** How many of the busiest keys the overview names. */
const BUSIEST_KEYS = 10

export interface KeyQuery {
  /** A substring of the name or token hint, case ignored, or a key's id. */
  search?: string
  state?: KeyState
  plan?: Plan
  sort?: KeySort
  /** A cursor from the previous page's `next`. */
  cursor?: string
  limit: number
}

export interface KeyPage {
  keys: KeyView[]
  /** Where the next page starts; undefined on the last page. */
  next: string | undefined
}

/** A page of the keys that match, in the order asked for (default: by id). A cursor this service did not make, or made for another order, is refused. */
export async function searchKeys (storage: Pick<KeyStore, 'searchApiKeys'> & LeakStore & Pick<StoreConnection, 'secret'>, now: number, query: KeyQuery): Promise<KeyPage> {
  const sort = query.sort ?? 'id'
  const secret = await cursorSecret(storage)
  const after = query.cursor === undefined ? undefined : decodeCursor(secret, sort, query.cursor)
  const search = query.search?.trim()
  // One more than asked for tells whether another page follows.
  const records = await storage.searchApiKeys({
    ...(search === undefined || search === '' ? {} : { text: search }),
    ...(query.state === undefined ? {} : { state: query.state }),
    ...(query.plan === undefined ? {} : { plan: query.plan }),
    ...(after === undefined ? {} : { after }),
    sort,
    now,
    limit: query.limit + 1
  })
  const page = records.slice(0, query.limit)
  const last = page.at(-1)
  const next = records.length > query.limit && last !== undefined ? encodeCursor(secret, sort, last) : undefined
  return { keys: await viewAll(storage, page, now), next }
}

/**
 * Cursors of the key list are opaque and signed, as the public API's are
 * (pets/cursor.ts): the sort they were made for, the last key's last use
 * and id, and an HMAC with a secret every instance on the database shares.
 */
const MAC_BYTES = 12
const CURSOR_PAYLOAD = /^(id|lastUsed):(never|[1-9][0-9]{0,15}):([1-9][0-9]{0,15})$/
const cursorSecrets = new WeakMap<object, Promise<KeyObject>>()

async function cursorSecret (storage: Pick<StoreConnection, 'secret'>): Promise<KeyObject> {
  let secret = cursorSecrets.get(storage)
  if (secret === undefined) {
    secret = storage.secret('admin-cursor').then((bytes) => createSecretKey(bytes))
    // A database that could not be read is asked again next time.
    secret.catch(() => cursorSecrets.delete(storage))
    cursorSecrets.set(storage, secret)
  }
  return await secret
}

function mac (secret: KeyObject, payload: Buffer): Buffer {
  return createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES)
}

function encodeCursor (secret: KeyObject, sort: KeySort, key: { id: number, lastUsedAt: number | null }): string {
  const payload = Buffer.from(`${sort}:${key.lastUsedAt ?? 'never'}:${key.id}`)
  return Buffer.concat([payload, mac(secret, payload)]).toString('base64url')
}

function decodeCursor (secret: KeyObject, sort: KeySort, cursor: string): { id: number, lastUsedAt: number | null } {
  const bytes = Buffer.from(cursor, 'base64url')
  const payload = bytes.subarray(0, Math.max(0, bytes.length - MAC_BYTES))
  const signed = bytes.length > MAC_BYTES && bytes.toString('base64url') === cursor && timingSafeEqual(bytes.subarray(payload.length), mac(secret, payload))
  const match = signed ? CURSOR_PAYLOAD.exec(payload.toString()) : null
  if (match === null || match[1] !== sort) {
    throw new KeyRuleError('cursor', `is not one this list made for sort=${sort}: copy it from the Link header of the previous page, with the same sort`, 'query')
  }
  return { id: Number(match[3]), lastUsedAt: match[2] === 'never' ? null : Number(match[2]) }
}

/**
 * Days over for a day or more no longer change: every instance writes its
 * counts at least every 10 seconds (keys/usage.ts). Their totals, summed
 * over every key's rows (300,000 for 30 days of 10,000 keys), are kept per
 * storage once read, so that the overview reads the last two days only.
 */
const settledTotals = new WeakMap<object, Map<number, DayTotals>>()
/** About five years of days: past it, the memory is dropped and read again. */
const MAX_SETTLED_DAYS = 2_000

async function totalsOf (storage: Pick<UsageStore, 'usageTotals'>, from: number, to: number, today: number): Promise<DayTotals[]> {
  const lastSettled = Math.min(to, today - 2)
  let settled = settledTotals.get(storage)
  if (settled === undefined || settled.size > MAX_SETTLED_DAYS) {
    settled = new Map()
    settledTotals.set(storage, settled)
  }
  let first = from
  while (first <= lastSettled && settled.has(first)) first++
  if (first <= lastSettled) {
    const read = new Map((await storage.usageTotals(first, lastSettled)).map((row) => [row.day, row]))
    for (let day = first; day <= lastSettled; day++) settled.set(day, read.get(day) ?? { day, admitted: 0, refused: 0 })
  }
  const old: DayTotals[] = []
  for (let day = from; day <= lastSettled; day++) old.push(settled.get(day) as DayTotals)
  const recent = to > lastSettled ? await storage.usageTotals(Math.max(from, lastSettled + 1), to) : []
  return [...old, ...recent]
}

/** Every key's requests per UTC day, from `from` to `to` (default: the last 30 days), one row per day, zeros included, oldest first. */
export async function totalUsage (storage: Pick<UsageStore, 'usageTotals'>, range: { from?: string, to?: string }, now: number): Promise<DayUsage[]> {
  const { from, to } = usageSpan(range, now)
  return everyDay(from, to, await totalsOf(storage, from, to, Math.floor(now / DAY_MS)))
}

export interface Overview {
  /** Today's UTC date: the day `busiest` counts. */
  today: string
  /** Every key's requests per day over the last 30 days, oldest first. */
  usage: DayUsage[]
  /** The keys with the most requests today, most first. */
  busiest: Array<{ key: KeyView, admitted: number, refused: number }>
  /** `leaked`: keys a token of which was reported found in public or given up by its holder (docs/KEYS.md: Leaked tokens). */
  keys: { total: number, byState: Record<KeyState, number>, byPlan: Record<Plan, number>, leaked: number }
  /** What a key or a webhook endpoint may be given: read by the console rather than written into it. */
  choices: {
    plans: Array<{ plan: Plan, perMinute: number | null, perDay: number | null }>
    scopes: Scope[]
    overlap: { maxSeconds: number, defaultSeconds: number, suggestedSeconds: number[] }
    eventTypes: EventType[]
  }
}

export async function overview (storage: Pick<KeyStore, 'countApiKeys'> & Pick<UsageStore, 'usageTotals' | 'busiestKeys'> & LeakStore, now: number): Promise<Overview> {
  const [usage, busiest, counts, leaked] = await Promise.all([
    totalUsage(storage, {}, now),
    storage.busiestKeys(Math.floor(now / DAY_MS), BUSIEST_KEYS),
    storage.countApiKeys(now),
    storage.countLeakedKeys()
  ])
  const busiestViews = await viewAll(storage, busiest.map(({ key }) => key), now)
  const byState = Object.fromEntries(KEY_STATES.map((state) => [state, 0])) as Record<KeyState, number>
  const byPlan = Object.fromEntries(PLANS.map((plan) => [plan, 0])) as Record<Plan, number>
  let total = 0
  for (const { state, plan, count } of counts) {
    byState[state] += count
    byPlan[plan] += count
    total += count
  }
  return {
    today: new Date(now).toISOString().slice(0, 10),
    usage,
    // viewAll keeps the keys' order: each view is its row's.
    busiest: busiest.map(({ admitted, refused }, i) => ({ key: busiestViews[i] as KeyView, admitted, refused })),
    keys: { total, byState, byPlan, leaked },
    choices: {
      plans: PLANS.map((plan) => plan === 'enterprise'
        ? { plan, perMinute: null, perDay: null }
        : { plan, ...limitsFor(plan, { perMinute: null, perDay: null }) }),
      scopes: [...SCOPES],
      overlap: { maxSeconds: MAX_OVERLAP_SECONDS, defaultSeconds: DEFAULT_OVERLAP_SECONDS, suggestedSeconds: SUGGESTED_OVERLAPS },
      eventTypes: [...EVENT_TYPES]
    }
  }
}
