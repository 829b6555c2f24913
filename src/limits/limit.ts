// Rate limits and bans: a request is counted against its key, or, without
// a valid key, against its client address; the decision says whether it
// may pass and which headers report the limit. Plain functions, with no web
// framework in them: the gate (plugins/gate.ts) applies the decision to the
// reply. The counting itself is the store's.
import { LRUCache } from 'lru-cache'
import { type ApiError, Errors } from '../errors.js'
import { ANONYMOUS_PER_MINUTE } from './plans.js'
import { WINDOW_MS } from '../domain.js'
import { type BanPolicy, type Decision, type HitRequest, type RateLimitStore, type Release, type WindowLimit, type WindowState } from './store.js'
import { addressSubject } from './subject.js'
import type { ApiKeyRecord } from '../db/storage.js'
import type { Limits } from './plans.js'

/**
 * A request's valid API key, and the limits it is counted against: what
 * keys/identify.ts finds for a token. Declared here, where it is counted,
 * because limits/ is below keys/ (docs/DEVELOPING.md#imports-flow-one-way).
 */
export interface Caller {
  key: ApiKeyRecord
  limits: Limits
  /** Its requests in flight at once, at most. */
  concurrency: number
}

/** What the limiter tells the rest of the service: metrics count it, the log records bans. */
export interface LimitEvents {
  refused: (code: 'rate_limited' | 'api_key_banned' | 'concurrency_limited') => void
  banned: (keyId: number, until: number) => void
  /**
   * A key's day window, counted for a request, is at or past a level
   * (QUOTA_LEVELS): told for every such request, not only the one that
   * crossed, so that a level jumped over (a lowered limit) is still told;
   * the listener keeps it to once. Must not throw or wait.
   */
  quotaReached?: (reached: { keyId: number, level: QuotaLevel, limit: number, used: number, at: number }) => void
}

/** The shares of a key's daily limit that are announced (docs/WEBHOOKS.md: Quota and expiry). */
export type QuotaLevel = 'warning' | 'exhausted'
const QUOTA_LEVELS: ReadonlyArray<{ level: QuotaLevel, share: number }> = [{ level: 'warning', share: 0.8 }, { level: 'exhausted', share: 1 }]

/** The levels a day window stands at or past: used, at least its share of the limit, rounded up. */
function quotaLevels (day: WindowState): Array<{ level: QuotaLevel, used: number }> {
  const used = day.limit - day.remaining
  return QUOTA_LEVELS.filter(({ share }) => used >= Math.ceil(day.limit * share)).map(({ level }) => ({ level, used }))
}

export interface LimitOptions {
  store: RateLimitStore
  ban: BanPolicy
  now: () => number
  events?: LimitEvents
}

/** Who a request is counted against. */
interface Counted {
  /** The request's valid key; without one, the address is counted. */
  caller: Caller | undefined
  address: string
  /** The key could not be checked (the database is down): its answer is the outage, never a 429. */
  keyUnchecked: boolean
}

/** The headers every answer carries from here on, and the refusal when the limit is spent. */
export interface LimitDecision {
  headers: Record<string, string>
  refusal: ApiError | undefined
}

/** Where a key stands, looked at without spending anything; undefined when the look was refused. */
export type Standing = Decision

/**
 * Looks at a key's quota for GET /v1/rate_limit: spends none of it, but is
 * counted under a cap of its own, per key, so that asking cannot take the
 * store from everyone (docs/API.md: Rate limits).
 */
export const STANDING_PER_MINUTE = 600

export interface Limit {
  (counted: Counted): Promise<LimitDecision>
  /**
   * Whether this address was refused for its limit in the window that is
   * still running, as far as this instance has seen: the gate then counts
   * a token that no key has before it asks the database about it.
   */
  addressSpent: (address: string) => boolean
  /** Where a caller's key stands, its quota untouched; refused (429) past STANDING_PER_MINUTE looks in a minute. */
  standing: (caller: Caller) => Promise<LimitDecision & { standing: Standing | undefined }>
  /**
   * The answer to a request over its key's cap of requests in flight: the
   * key's windows as they stand, untouched (it counts toward neither, nor
   * toward a ban), and the cap named in RateLimit-Policy.
   */
  overConcurrency: (caller: Caller) => Promise<LimitDecision & { refusal: ApiError }>
  /**
   * A caller's request counted as the limit counts it, and one of its key's
   * slots of requests in flight taken, in one step of the store
   * (RateLimitStore `hitHolding`): undefined when every slot is taken, and
   * nothing was counted. Only with a store that has it.
   */
  withSlot: ((caller: Caller) => Promise<{ decision: LimitDecision, release: Release } | undefined>) | undefined
}

/**
 * The rate-limit headers of a request shed before it was counted
 * (plugins/shed.ts): it is counted against nothing, and the window they
 * describe is the service's own, with nothing left in it until Retry-After
 * has passed (docs/API.md: Overload).
 */
export function overloadHeaders (now: number, retryAfterSeconds: number): Record<string, string> {
  return {
    'x-ratelimit-limit': '0',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(Math.ceil(now / 1000) + retryAfterSeconds),
    'ratelimit-policy': policyItem('overload', 0, retryAfterSeconds),
    ratelimit: stateItem('overload', 0, retryAfterSeconds)
  }
}

/** Counts a request that never became one against its client address, and gives the rate-limit headers to send. */
export type CountAddress = (address: string) => Promise<Record<string, string>>

/**
 * The items of the IETF draft's structured headers, one per window and
 * one for a ban, as schemas/rate-limit.ts describes them.
 * https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
 */
const policyItem = (name: string, quota: number, seconds: number): string => `"${name}";q=${quota};w=${seconds}`
const stateItem = (name: string, remaining: number, seconds: number): string => `"${name}";r=${remaining};t=${seconds}`
/** A cap on requests at once has no window: the draft's quota unit for it instead, and nothing left when it refuses. */
const concurrencyPolicyItem = (cap: number): string => `"concurrency";q=${cap};qu="concurrent-requests"`
const CONCURRENCY_STATE_ITEM = '"concurrency";r=0'

/** Requests without a valid key: counted per client address, by the minute, never banned. */
function hitAddress (store: RateLimitStore, address: string, time: number): Promise<Decision> {
  return store.hit({ subject: addressSubject(address), windows: [{ window: 'minute', limit: ANONYMOUS_PER_MINUTE }], ban: undefined }, time)
}

/** Addresses remembered as spent at once: past this, the least recently refused are forgotten, which costs them a lookup again. */
const SPENT_ADDRESSES_MAX = 10_000

export function createLimit ({ store, ban, now, events }: LimitOptions): Limit {
  // Each spent address, until its window resets.
  const spent = new LRUCache<string, number>({ max: SPENT_ADDRESSES_MAX })
  /** What a request's decision means: its headers, its refusal, and what the limiter tells of it. */
  const judge = ({ caller, address, keyUnchecked }: Counted, decision: Decision, time: number): LimitDecision => {
    if (caller === undefined && decision.outcome === 'limited') spent.set(address, time + retryAfter(decision, time) * 1000)
    if (caller !== undefined && events?.quotaReached !== undefined) {
      const day = decision.windows.find((w) => w.window === 'day')
      for (const { level, used } of day === undefined ? [] : quotaLevels(day)) {
        events.quotaReached({ keyId: caller.key.id, level, limit: day?.limit ?? 0, used, at: time })
      }
    }
    const headers = rateLimitHeaders(decision, time, ban)
    // A key the database was not there to check is counted against its
    // address, but the outage is its answer (503, Retry-After 5): clients
    // retrying through it from one address are not told they are over a limit.
    if (decision.outcome === 'limited' && keyUnchecked) return { headers, refusal: undefined }
    if (decision.outcome === 'limited') {
      events?.refused('rate_limited')
      if (decision.banEarnedUntil !== undefined && caller !== undefined) events?.banned(caller.key.id, decision.banEarnedUntil)
      return { headers, refusal: Errors.rateLimited(retryAfter(decision, time)) }
    }
    if (decision.outcome === 'banned') {
      events?.refused('api_key_banned')
      return { headers, refusal: Errors.banned(seconds(decision.bannedUntil - time)) }
    }
    return { headers, refusal: undefined }
  }
  const keyHit = (caller: Caller): HitRequest => ({ subject: `key:${caller.key.id}`, windows: windowsOf(caller.limits), ban })
  const limit = async (counted: Counted): Promise<LimitDecision> => {
    const time = now()
    const { caller, address } = counted
    const decision = caller === undefined ? await hitAddress(store, address, time) : await store.hit(keyHit(caller), time)
    return judge(counted, decision, time)
  }
  const hitHolding = store.hitHolding
  const withSlot = hitHolding === undefined
    ? undefined
    : async (caller: Caller): Promise<{ decision: LimitDecision, release: Release } | undefined> => {
      const time = now()
      const held = await hitHolding(keyHit(caller), time, caller.concurrency)
      if (held === undefined) return undefined
      return { decision: judge({ caller, address: '', keyUnchecked: false }, held.decision, time), release: held.release }
    }
  /** Where a key's windows stand, nothing charged. */
  const lookAt = async (caller: Caller, time: number): Promise<Decision> => await store.hit({ ...keyHit(caller), charge: false }, time)
  const standing = async (caller: Caller): Promise<LimitDecision & { standing: Standing | undefined }> => {
    const time = now()
    const looks = await store.hit({ subject: `standing:key:${caller.key.id}`, windows: [{ window: 'minute', limit: STANDING_PER_MINUTE }], ban: undefined }, time)
    if (looks.outcome !== 'allowed') {
      events?.refused('rate_limited')
      // The cap's own headers: the key's quota is not what ran out.
      return { headers: rateLimitHeaders(looks, time), refusal: Errors.rateLimited(retryAfter(looks, time)), standing: undefined }
    }
    const decision = await lookAt(caller, time)
    return { headers: rateLimitHeaders(decision, time, ban), refusal: undefined, standing: decision }
  }
  const overConcurrency = async (caller: Caller): Promise<LimitDecision & { refusal: ApiError }> => {
    const time = now()
    const headers = rateLimitHeaders(await lookAt(caller, time), time, ban)
    headers['ratelimit-policy'] += `, ${concurrencyPolicyItem(caller.concurrency)}`
    headers.ratelimit += `, ${CONCURRENCY_STATE_ITEM}`
    events?.refused('concurrency_limited')
    return { headers, refusal: Errors.concurrencyLimited(caller.concurrency) }
  }
  return Object.assign(limit, { addressSpent: (address: string) => (spent.get(address) ?? 0) > now(), standing, overConcurrency, withSlot })
}

/** Counts against a client address alone: for answers given before there is a request to read a key from. */
export function createAddressCounter ({ store, now }: Pick<LimitOptions, 'store' | 'now'>): CountAddress {
  return async (address) => {
    const time = now()
    return rateLimitHeaders(await hitAddress(store, address, time), time)
  }
}

/**
 * A route's own cap per client address, by the minute, apart from every
 * other limit: for the routes that need no key (routes/leaks.ts). `name`
 * keeps each route's count its own.
 */
export function createAddressLimit ({ store, now, name, perMinute }: Pick<LimitOptions, 'store' | 'now'> & { name: string, perMinute: number }): (address: string) => Promise<LimitDecision> {
  return async (address) => {
    const time = now()
    const decision = await store.hit({ subject: `${name}:${addressSubject(address)}`, windows: [{ window: 'minute', limit: perMinute }], ban: undefined }, time)
    return { headers: rateLimitHeaders(decision, time), refusal: decision.outcome === 'allowed' ? undefined : Errors.rateLimited(retryAfter(decision, time)) }
  }
}

function windowsOf (limits: { perMinute: number, perDay: number }): WindowLimit[] {
  return [{ window: 'minute', limit: limits.perMinute }, { window: 'day', limit: limits.perDay }]
}

/** The window with the fewest requests left; on a tie, the one that resets later. */
function tightest (windows: readonly WindowState[]): WindowState {
  return windows.reduce((a, b) => b.remaining < a.remaining || (b.remaining === a.remaining && b.resetAt > a.resetAt) ? b : a)
}

/** Whole seconds, rounded up, at least 1: what Retry-After may carry. */
function seconds (ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

/** Until every full window has reset: a key out of its daily quota comes back tomorrow. */
function retryAfter (decision: Decision, now: number): number {
  const full = decision.windows.filter((w) => w.remaining === 0)
  return seconds(Math.max(...full.map((w) => w.resetAt)) - now)
}

function rateLimitHeaders (decision: Decision, now: number, ban?: BanPolicy): Record<string, string> {
  const shown = tightest(decision.windows)
  const banned = decision.outcome === 'banned'
  // docs/API.md: Rate limits: while banned, X-RateLimit-* describe the ban.
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(shown.limit),
    'x-ratelimit-remaining': banned ? '0' : String(shown.remaining),
    'x-ratelimit-reset': String(Math.ceil((banned ? decision.bannedUntil : shown.resetAt) / 1000))
  }
  // One item per window, each telling the truth about its window; a ban is
  // one more item of its own, with nothing left until it ends, so the
  // windows' counts stay as they are.
  const policy = decision.windows.map((w) => policyItem(w.window, w.limit, WINDOW_MS[w.window] / 1000))
  const state = decision.windows.map((w) => stateItem(w.window, w.remaining, seconds(w.resetAt - now)))
  if (banned) {
    policy.push(policyItem('ban', 0, ban?.seconds ?? seconds(decision.bannedUntil - now)))
    state.push(stateItem('ban', 0, seconds(decision.bannedUntil - now)))
  }
  headers['ratelimit-policy'] = policy.join(', ')
  headers.ratelimit = state.join(', ')
  return headers
}
