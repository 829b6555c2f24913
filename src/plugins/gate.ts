// The gate: who is calling, and may they? Every /v1 API request passes it
// first, whatever its method or path, in this order and in this function
// alone (README: "The order a request takes"):
//
//   1. identify (access/identify.ts): the bearer token names a key, or the
//      reason there is none;
//   2. limit (access/limit.ts): the request is counted against its key, or,
//      without a valid key, against its client address; 429 when that is
//      spent. On a route that spends no quota (`config.spendsQuota: false`,
//      GET /v1/rate_limit) a valid key's quota is only looked at, under a
//      cap of its own. Every answer from here on carries the rate-limit headers;
//   3. refuse: without a valid key, 401 (503 when the key could not be
//      checked);
//   4. framing: a request Node would have refused itself (no Host, an
//      unmet Expect), 400 or 417: the edge (edge.ts) passes these on so
//      that they get the Error body and, here, the rate-limit headers;
//   5. scope: a valid key whose scopes lack the one its route declares
//      (`config.scope`) gets 403. Routing has happened by now (onRequest
//      runs after it), so the router's own answers (404, 405) declare no
//      scope and come instead; the body is not read yet, so a key that may
//      not write learns nothing of what is wrong with its body.
//
// Only a request that passes reaches the router's answers (404, 405), the
// body parser and the handler. Requests the router cannot even route
// (`frameworkErrors` in app.ts) call the same function. Requests outside
// the gate (the OpenAPI document, the docs page, health) get step 4 alone,
// before their body is read.
import fp from 'fastify-plugin'
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import { ApiError, ERROR_CODES, Errors, type ErrorCode } from '../errors.js'
import { authorizationHeaders, type Caller, type Identify } from '../access/identify.js'
import type { Limit, Standing } from '../access/limit.js'
import type { Scope } from '../domain.js'
import type { UsageCounter } from '../keys/usage.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for this route; every API operation declares one, but GET /v1/rate_limit, which any key may call. */
    scope?: Scope
    /** False: a request with a valid key spends none of its quota; the gate only looks where the key stands (access/limit.ts `standing`). */
    spendsQuota?: boolean
  }
  interface FastifyRequest {
    /** The request's valid API key, once the gate has identified it; undefined without one, and outside the gate. */
    access: Caller | undefined
    /** Where its key stands, on a route that spends no quota; undefined elsewhere. */
    standing: Standing | undefined
  }
  interface FastifyInstance {
    /** Present in the scope the gate guards, and the scopes inside it. */
    gated: true
  }
}

export type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/** Every error the gate can answer, so every API operation documents their statuses. */
const GATE_ANSWERS = [
  'missing_api_key', 'invalid_api_key', 'service_unavailable', // identify, refuse
  'rate_limited', 'api_key_banned', // limit
  'invalid_request', 'expectation_failed', // framing; a URL the router cannot take
  'insufficient_scope' // scope
] as const satisfies readonly ErrorCode[]

/**
 * The statuses the gate can answer an operation, in ascending order: its
 * 403 only where the route declares a scope (`config.scope`).
 */
export function gateStatuses ({ scoped }: { scoped: boolean }): number[] {
  const codes = GATE_ANSWERS.filter((code) => scoped || code !== 'insufficient_scope')
  return [...new Set(codes.map((code) => ERROR_CODES[code].status))].sort((a, b) => a - b)
}

export function createGate ({ identify, limit, usage }: { identify: Identify, limit: Limit, usage: Pick<UsageCounter, 'count'> }): Gate {
  return async (request, reply) => {
    const token = identify.read(request.headers.authorization, authorizationHeaders(request.raw.rawHeaders))
    // From an address already refused in this window, a token no key has is
    // counted against the address and gets its 429 without a lookup of its
    // own: guessing cannot take the database from everyone (README: Security).
    // Any other token is looked up, and counted against its key alone.
    const early = !(token instanceof ApiError) && limit.addressSpent(request.ip) && !await identify.mayExist(token)
      ? await limit({ caller: undefined, address: request.ip, keyUnchecked: false })
      : undefined
    const identity = token instanceof ApiError
      ? token
      : early?.refusal !== undefined ? Errors.unknownKey() : await identify.find(token)
    const refusal = identity instanceof ApiError ? identity : undefined
    const caller = identity instanceof ApiError ? undefined : identity
    request.access = caller
    // Each request is counted once against whom it names: its key when it
    // has one, else its address, unless that was done above.
    let decision
    if (early !== undefined && caller === undefined) {
      decision = early
    } else if (caller !== undefined && routeConfig(request)?.spendsQuota === false) {
      const looked = await limit.standing(caller)
      request.standing = looked.standing
      decision = looked
    } else {
      decision = await limit({ caller, address: request.ip, keyUnchecked: refusal?.code === 'service_unavailable' })
    }
    reply.headers(decision.headers)
    // Usage (keys/usage.ts): whatever follows, a request of a key is admitted unless its limit refused it.
    if (caller !== undefined) usage.count(caller.key, decision.refusal === undefined ? 'admitted' : 'refused')
    const refused = decision.refusal ?? refusal
    // A refusal keeps its connection unless its body is still unread (app.ts, edge.ts `bodyUnread`):
    // a new socket for each refused attempt would cost the server more than the answer.
    if (refused !== undefined) throw refused
    const unmet = unmetFraming(request.raw)
    if (unmet !== undefined) throw unmet
    const scope = routeConfig(request)?.scope
    if (scope !== undefined && caller !== undefined && !caller.key.scopes.includes(scope)) throw Errors.insufficientScope(scope)
  }
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

/** Node's own test for the one expectation it meets (lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** Why Node would have refused this request, if it would have. */
function unmetFraming (raw: IncomingMessage): ApiError | undefined {
  // As Node, and RFC 9110 §10.1.1: HTTP/1.0 requests need no Host, and their expectations are ignored.
  if (raw.httpVersionMajor !== 1 || raw.httpVersionMinor !== 1) return undefined
  if (raw.headers.host === undefined) return Errors.missingHost()
  const expect = raw.headers.expect
  if (expect !== undefined && !CONTINUE.test(expect)) return Errors.expectationFailed()
  return undefined
}

/** Paths whose requests pass the gate: where a request the router cannot take is answered after the gate. */
export function isApiPath (url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?')
}

/** The gate, on every request of the scope it is registered in. */
export default fp<{ gate: Gate }>(async function gate (app, { gate }) {
  app.decorateRequest('access', undefined)
  app.decorateRequest('standing', undefined)
  app.decorate('gated', true)
  app.addHook('onRequest', gate)
}, { name: 'gate' })

/**
 * Step 4 alone, for requests outside the gate, before their body is read.
 * Whether the gate saw a request is told by the scope its route belongs
 * to, not guessed from its URL: the OpenAPI document and the docs page are
 * under /v1 but not gated.
 */
export const framingOutsideGate = fp(async function framingOutsideGate (app) {
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const unmet = request.server.hasDecorator('gated') ? undefined : unmetFraming(request.raw)
    if (unmet === undefined) done(null, payload)
    else done(unmet)
  })
}, { name: 'framing-outside-gate' })
