// A request's framing: an HTTP/1.1 request without Host (400) or with an Expect
// it cannot meet (417), which the edge passes on rather than let Node answer
// with a bare status line, and a chunked body on a request that asks to
// upgrade the connection (400), whose errors Node's parser would not report. The first preParsing hook of both listeners: after
// who is calling, before scope, 405, 404 and the body (docs/INTERNALS.md, section "Framing").
import fp from 'fastify-plugin'
import type { IncomingMessage } from 'node:http'
import { Errors, type ApiError, type ErrorCode } from '../errors.js'

/** Every code a refusal of framing may carry, for the operations' documented statuses. */
export const FRAMING_ANSWERS = ['invalid_request', 'expectation_failed'] as const satisfies readonly ErrorCode[]

/**
 * Node's test for the one expectation it meets (lib/_http_server.js): an
 * injected request (light-my-request) never passes Node's server, so the
 * same test decides both, and they are answered alike.
 */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** A Connection header naming `upgrade`: with an Upgrade header, Node's parser takes the request as one that may switch protocols. */
const UPGRADE = /(?:^|[\s,])upgrade(?:$|[\s,])/i

/** Why this request's framing is refused, if it is. */
export function framingRefusal (raw: IncomingMessage): ApiError | undefined {
  // Once Node's parser has seen an upgrade it reports no error in the body, so a
  // malformed chunk would leave the request waiting for its timeout instead of
  // a 400 (regression: fuzz seed 1405302259). No client needs both: curl's h2c
  // upgrade of a POST sends Content-Length.
  if (raw.headers.upgrade !== undefined && raw.headers['transfer-encoding'] !== undefined && UPGRADE.test(raw.headers.connection ?? '')) {
    return Errors.upgradeWithChunkedBody()
  }
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
