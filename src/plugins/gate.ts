// The gate: who is calling, and may they? Every /v1 request passes it first,
// in the order docs/API.md gives ("The order a request takes"): identify,
// limit and refuse in one onRequest hook; after the framing check, scope in a
// preParsing hook, before the body is read (docs/INTERNALS.md, section "Gate").
import fp from 'fastify-plugin'
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, Errors, statusesOf, type ErrorCode } from '../errors.js'
import { FRAMING_ANSWERS } from './framing.js'
import { authorizationHeaders, type Identify } from '../keys/identify.js'
import type { InFlight } from '../limits/in-flight.js'
import type { FairPool } from '../limits/fair-pool.js'
import type { TurnShare } from '../limits/turn-share.js'
import { BUSY_IN_FLIGHT, type Shed } from './shed.js'
import type { Caller, Limit, LimitDecision, Standing } from '../limits/limit.js'
import { CONCURRENCY_WAIT_MS } from '../limits/plans.js'
import type { Scope } from '../domain.js'
import type { UsageCounter } from '../keys/usage.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for this route; every API operation declares one, but GET /v1/rate_limit, which any key may call. */
    scope?: Scope
    /** False: a request with a valid key spends none of its quota; the gate only looks where the key stands (limits/limit.ts `standing`). */
    spendsQuota?: boolean
  }
  interface FastifyRequest {
    /** The request's valid API key, once the gate has identified it; undefined without one, and outside the gate. */
    access: Caller | undefined
    /** Where its key stands, on a route that spends no quota; undefined elsewhere. */
    standing: Standing | undefined
  }
}

export type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/** Every error an API request can get before its operation, so every API operation documents their statuses. */
const GATE_ANSWERS = [
  'overloaded', // shed, before the gate (plugins/shed.ts)
  'missing_api_key', 'invalid_api_key', 'service_unavailable', // identify, refuse
  'rate_limited', 'api_key_banned', 'concurrency_limited', // limit
  ...FRAMING_ANSWERS,
  'invalid_request', // a URL the router cannot take
  'insufficient_scope' // scope
] as const satisfies readonly ErrorCode[]

/**
 * The statuses the gate can answer an operation, in ascending order: its
 * 403 only where the route declares a scope (`config.scope`).
 */
export function gateStatuses ({ scoped }: { scoped: boolean }): number[] {
  return statusesOf(GATE_ANSWERS.filter((code) => scoped || code !== 'insufficient_scope'))
}

export function createGate ({ identify, limit, usage, inFlight, turns, shed, pool }: {
  identify: Identify
  limit: Limit
  usage: Pick<UsageCounter, 'count'>
  inFlight: InFlight
  turns: TurnShare
  /** Undefined with SHED=off. */
  shed: Shed | undefined
  /** The database pool's places, given to keys in turn; undefined without a pool (SQLite). */
  pool: FairPool | undefined
}): Gate {
  // Over a threshold of overload, a key is shed first when it has requests waiting for a turn or many in flight.
  const busy = (keyId: number): boolean => turns.waiting(keyId) > 0 || inFlight.inFlight(keyId) >= BUSY_IN_FLIGHT
  return async (request, reply) => {
    const token = identify.read(request.headers.authorization, authorizationHeaders(request.raw.rawHeaders))
    // Read once: behind trusted proxies each read of request.ip parses X-Forwarded-For again.
    const address = request.ip
    // From an address already refused in this window, a token no key has is
    // counted against the address and gets its 429 without a lookup of its
    // own: guessing cannot take the database from everyone (docs/SECURITY.md).
    // Any other token is looked up, and counted against its key alone.
    const early = !(token instanceof ApiError) && limit.addressSpent(address) && !await identify.mayExist(token)
      ? await limit({ caller: undefined, address, keyUnchecked: false })
      : undefined
    const identity = token instanceof ApiError
      ? token
      : early?.refusal !== undefined ? Errors.unknownKey() : await identify.find(token)
    const refusal = identity instanceof ApiError ? identity : undefined
    const caller = identity instanceof ApiError ? undefined : identity
    request.access = caller
    if (caller !== undefined) {
      const id = caller.key.id
      // Overloaded, the busy keys are shed first (plugins/shed.ts); uncounted, as a request shed before the gate.
      const shedding = shed?.busyKey(reply, id, busy)
      if (shedding !== undefined) throw shedding
      // Past its share of this turn of the loop, a key's request waits for a later one, so that others go first.
      const turn = turns.take(id)
      if (turn !== undefined) await turn
    }
    // Each request is counted once against whom it names: its key when it
    // has one, else its address, unless that was done above.
    let decision
    const spends = routeConfig(request)?.spendsQuota !== false
    // Counted with its slot of requests in flight, in one step, where the store can (limits/limit.ts `withSlot`).
    let counted: LimitDecision | undefined
    if (caller !== undefined && spends) {
      // Before its windows: a request over the cap spends neither, nor counts toward a ban.
      const withSlot = limit.withSlot
      const release = await inFlight.acquire(caller.key.id, caller.concurrency, CONCURRENCY_WAIT_MS, withSlot === undefined
        ? undefined
        : async () => {
          const held = await withSlot(caller)
          counted = held?.decision
          return held?.release
        })
      if (release === undefined) {
        const over = await limit.overConcurrency(caller)
        reply.headers(over.headers)
        usage.count(caller.key, 'refused')
        throw over.refusal
      }
      whenClosed(reply, release)
    }
    if (early !== undefined && caller === undefined) {
      decision = early
    } else if (caller !== undefined && !spends) {
      const looked = await limit.standing(caller)
      request.standing = looked.standing
      decision = looked
    } else {
      decision = counted ?? await limit({ caller, address, keyUnchecked: refusal?.code === 'service_unavailable' })
    }
    reply.headers(decision.headers)
    // Usage (keys/usage.ts): whatever follows, a request of a key is admitted unless its limit refused it.
    if (caller !== undefined) usage.count(caller.key, decision.refusal === undefined ? 'admitted' : 'refused')
    const refused = decision.refusal ?? refusal
    // A refusal keeps its connection unless its body is still unread (app.ts, edge.ts `bodyUnread`):
    // a new socket for each refused attempt would cost the server more than the answer.
    if (refused !== undefined) throw refused
    if (caller !== undefined && spends && pool !== undefined) {
      // Admitted: its operation waits for a place in the pool in its key's turn, not behind a greedy key's queries.
      const place = pool.take(caller.key.id)
      whenClosed(reply, typeof place === 'function' ? place : await place)
    }
  }
}

/** Gives `release` back when the answer is sent or the client goes, whichever is first; the client may have gone while the request waited. */
function whenClosed (reply: FastifyReply, release: () => void): void {
  reply.raw.once('close', release)
  if (reply.raw.closed) release()
}

/** A request the router could not take (frameworkErrors) has no route options. */
function routeConfig (request: FastifyRequest): FastifyContextConfig | undefined {
  return (request.routeOptions as Partial<typeof request.routeOptions> | undefined)?.config
}

/** The caller of a request the gate let through: there always is one. */
export function callerOf (request: FastifyRequest): Caller {
  if (request.access === undefined) throw Errors.internal()
  return request.access
}

/** Paths whose requests pass the gate: where a request the router cannot take is answered after the gate. */
export function isApiPath (url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?')
}

/** The gate, on every request of the scope it is registered in: identify, limit, refuse; then, after the framing check, scope. */
export default fp<{ gate: Gate }>(async function gate (app, { gate }) {
  app.decorateRequest('access', undefined)
  app.decorateRequest('standing', undefined)
  app.addHook('onRequest', gate)
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const scope = request.routeOptions.config.scope
    const caller = request.access
    if (scope !== undefined && caller !== undefined && !caller.key.scopes.includes(scope)) done(Errors.insufficientScope(scope))
    else done(null, payload)
  })
}, { name: 'gate', dependencies: ['framing'] })
