// A request's framing: whether it is acceptable, and the answer when it is
// not. Node's HTTP server would refuse an HTTP/1.1 request without Host
// (400) and an Expect it cannot meet (417) itself, with a bare status line;
// the edge (edge.ts) has it pass them on instead, and they are refused
// here, with the Error body. What never becomes a request (a line or header
// the parser refuses, CONNECT, PRI) is the edge's to answer.
//
// Where it sits (docs/API.md: The order a request takes): it is the first
// preParsing hook of both listeners, so it runs after onRequest has
// settled who is calling (the gate under /v1, whose 401 or 429 comes first
// and whose rate-limit headers the refusal carries; the admin token under
// the admin API), and before the key's scope, the router's 405 and 404,
// and the body. A /v1 URL the router cannot take runs no hook: app.ts's
// `frameworkErrors` calls `framingRefusal` itself.
import fp from 'fastify-plugin'
import type { IncomingMessage } from 'node:http'
import { Errors, type ApiError, type ErrorCode } from '../errors.js'

/** Every code a refusal of framing may carry, for the operations' documented statuses. */
export const FRAMING_ANSWERS = ['invalid_request', 'expectation_failed'] as const satisfies readonly ErrorCode[]

/**
 * Node's test for the one expectation it meets (lib/_http_server.js), the
 * one it sends `100 Continue` for. Node tells a request's fate on a socket
 * by the event it hands it on with (`checkExpectation`), but a request
 * injected into Fastify (light-my-request) never passes Node's server: the
 * same test decides both, so that they are answered alike.
 */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** Why this request's framing is refused, if it is. */
export function framingRefusal (raw: IncomingMessage): ApiError | undefined {
  // As Node, and RFC 9110 §10.1.1: HTTP/1.0 requests need no Host, and their expectations are ignored.
  if (raw.httpVersionMajor !== 1 || raw.httpVersionMinor !== 1) return undefined
  // RFC 9112 §3.2; an empty Host is one, as Node has it.
  if (raw.headers.host === undefined) return Errors.missingHost()
  const expect = raw.headers.expect
  if (expect !== undefined && !CONTINUE.test(expect)) return Errors.expectationFailed()
  return undefined
}

/** The framing check, on every request of the instance it is registered in, ahead of every other preParsing hook. */
export default fp(async function framing (app) {
  // A callback: an async hook would cost every request a promise.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const refusal = framingRefusal(request.raw)
    if (refusal === undefined) done(null, payload)
    else done(refusal)
  })
}, { name: 'framing' })
