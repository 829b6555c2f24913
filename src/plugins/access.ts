// Who is calling, and may they? Every /v1 request passes this gate first,
// whatever its method or path, in one fixed order (README: "The order a
// request takes"):
//
//   1. identify: the bearer token names a key, or the reason there is none;
//   2. limit: the request is counted against its key, or, without a valid
//      key, against its client address; 429 when that is spent. Every answer
//      from here on carries the rate-limit headers;
//   3. refuse: without a valid key, 401; then a request Node would have
//      refused itself (no Host, an unmet Expect: plugins/framing.ts), 400 or 417.
//
// Only a request that passes reaches the router's answers (404, 405), the
// body parser and the handler. Requests the router cannot even route
// (`frameworkErrors` in app.ts) pass the same gate.
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Identify } from './auth.js'
import type { Limit } from './rate-limit.js'
import { unmetFraming } from './framing.js'

export type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

export function createGate ({ identify, limit }: { identify: Identify, limit: Limit }): Gate {
  return async (request, reply) => {
    await identify(request)
    await limit(request, reply)
    if (request.authFailure !== undefined) throw request.authFailure
    const unmet = unmetFraming(request)
    if (unmet !== undefined) throw unmet
  }
}

export default fp<{ gate: Gate }>(async function access (app, { gate }) {
  app.decorateRequest('caller', undefined)
  app.decorateRequest('authFailure', undefined)
  app.addHook('onRequest', gate)
}, { name: 'access' })
