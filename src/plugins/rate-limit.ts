// Rate limits and bans for every /v1 request (counted by the gate,
// access.ts), and the headers that report them on every /v1 response. The
// decision itself is the store's.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Errors } from '../errors.js'
import { ANONYMOUS_PER_MINUTE } from '../limits/plans.js'
import { WINDOW_MS, type BanPolicy, type Decision, type RateLimitStore, type WindowLimit, type WindowState } from '../limits/store.js'
import { addressSubject } from '../limits/subject.js'
import type { CountAddress } from './errors.js'

/** What the limiter tells the rest of the service: metrics count it, the log records bans. */
export interface LimitEvents {
  refused: (code: 'rate_limited' | 'api_key_banned') => void
  banned: (keyId: number, until: number) => void
}

export interface RateLimiterOptions {
  store: RateLimitStore
  ban: BanPolicy
  now: () => number
  events?: LimitEvents
}

/** Counts the request against its key (or its address), sets the headers, throws the 429. */
export type Limit = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/** Requests without a valid key: counted per client address, by the minute, never banned. */
function hitAddress (store: RateLimitStore, address: string, time: number): Promise<Decision> {
  return store.hit({ subject: addressSubject(address), windows: [{ window: 'minute', limit: ANONYMOUS_PER_MINUTE }], ban: undefined }, time)
}

export function createRateLimiter ({ store, ban, now, events }: RateLimiterOptions): Limit {
  return async (request, reply) => {
    const caller = request.caller
    const time = now()
    const decision = caller === undefined
      ? await hitAddress(store, request.ip, time)
      : await store.hit({ subject: `key:${caller.key.id}`, windows: windowsOf(caller.limits), ban }, time)
    reply.headers(rateLimitHeaders(decision, time, ban))
    // A key the database was not there to check is counted against its
    // address, but the outage is its answer (503, Retry-After 5): clients
    // retrying through it from one address are not told they are over a limit.
    if (decision.outcome === 'limited' && request.authFailure?.code === 'service_unavailable') return
    if (decision.outcome === 'limited') {
      events?.refused('rate_limited')
      if (decision.banEarnedUntil !== undefined && caller !== undefined) events?.banned(caller.key.id, decision.banEarnedUntil)
      throw Errors.rateLimited(retryAfter(decision, time))
    }
    if (decision.outcome === 'banned') {
      events?.refused('api_key_banned')
      throw Errors.banned(seconds(decision.bannedUntil - time))
    }
  }
}

/** Counts against a client address alone: for answers given before there is a request to read a key from. */
export function createAddressCounter ({ store, now }: Pick<RateLimiterOptions, 'store' | 'now'>): CountAddress {
  return async (address) => {
    const time = now()
    return rateLimitHeaders(await hitAddress(store, address, time), time)
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
  // DECISIONS §3 [contract]: while banned, X-RateLimit-* describe the ban.
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(shown.limit),
    'x-ratelimit-remaining': banned ? '0' : String(shown.remaining),
    'x-ratelimit-reset': String(Math.ceil((banned ? decision.bannedUntil : shown.resetAt) / 1000))
  }
  // The IETF draft's structured headers, one item per window, each telling
  // the truth about its window; a ban is one more item of its own, with
  // nothing left until it ends, so the windows' counts stay as they are.
  // https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
  const policy = decision.windows.map((w) => `"${w.window}";q=${w.limit};w=${WINDOW_MS[w.window] / 1000}`)
  const state = decision.windows.map((w) => `"${w.window}";r=${w.remaining};t=${seconds(w.resetAt - now)}`)
  if (banned) {
    policy.push(`"ban";q=0;w=${ban?.seconds ?? seconds(decision.bannedUntil - now)}`)
    state.push(`"ban";r=0;t=${seconds(decision.bannedUntil - now)}`)
  }
  headers['ratelimit-policy'] = policy.join(', ')
  headers.ratelimit = state.join(', ')
  return headers
}
