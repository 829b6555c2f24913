// Requests that Node's HTTP server would answer by itself, before any route
// is chosen, with a bare status line and no body: an HTTP/1.1 request
// without `Host` (400), an `Expect` other than 100-continue (417), and
// CONNECT (the connection closed without a word). DECISIONS §12 wants the
// Error body on these too, so Node is told to pass them on, and they are
// answered here like any other error: under the gate (plugins/access.ts),
// after it, so with the rate-limit headers; elsewhere before the body is read.
// https://nodejs.org/api/http.html#event-checkexpectation
import { randomUUID } from 'node:crypto'
import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { Errors, errorBody, type ApiError } from '../errors.js'
import { owe, type AnswerRaw, type CountAddress } from './errors.js'

/** Node's own test for the one expectation it meets (lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** Why Node would have refused this request, if it would have. */
export function unmetFraming (request: FastifyRequest): ApiError | undefined {
  const raw = request.raw
  // As Node, and RFC 9110 §10.1.1: HTTP/1.0 requests need no Host, and their expectations are ignored.
  if (raw.httpVersionMajor !== 1 || raw.httpVersionMinor !== 1) return undefined
  if (raw.headers.host === undefined) return Errors.missingHost()
  const expect = raw.headers.expect
  if (expect !== undefined && !CONTINUE.test(expect)) return Errors.expectationFailed()
  return undefined
}

/** Paths whose requests pass the gate (plugins/access.ts): where a request the router cannot take is answered after the gate. */
export function isApiPath (url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?')
}

interface FramingOptions {
  /** Answers a socket that never became a request (plugins/errors.ts). */
  answerRaw: AnswerRaw
  /** Counts a request against its client address, giving that limit's headers (plugins/rate-limit.ts). */
  countAddress: CountAddress
}

/**
 * Node's parser takes `PRI`, the method of HTTP/2's connection preface, in
 * an HTTP/0.9-style request line (`PRI /v1/`), though `http.METHODS` lacks
 * it and no router can route it: Fastify would answer it before any hook,
 * so without the rate-limit headers. It is refused here instead, as a
 * request that is not HTTP/1.1.
 */
const ROUTABLE = new Set(METHODS)

function isRoutable (request: IncomingMessage): boolean {
  return request.method !== undefined && ROUTABLE.has(request.method)
}

function refuseUnroutable (request: IncomingMessage, response: ServerResponse, countAddress: CountAddress): void {
  const answer = Errors.invalidHttp()
  const send = (headers: Record<string, string>): void => {
    response.writeHead(answer.status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'x-request-id': randomUUID(), connection: 'close' })
    response.end(JSON.stringify(errorBody(answer)))
  }
  countAddress(request.socket.remoteAddress ?? '').then(send, () => { send({}) })
}

export default fp<FramingOptions>(async function framing (app, { answerRaw, countAddress }) {
  // Every request, those with an Expect included, passes here in front of
  // Fastify's router: answers written by hand wait for those owed before
  // them on the connection (errors.ts), and a request no router can take
  // is refused before it reaches one.
  const take = (request: IncomingMessage, response: ServerResponse): void => {
    owe(request, response)
    if (isRoutable(request)) app.routing(request, response)
    else refuseUnroutable(request, response, countAddress)
  }
  // Fastify's own listener is app.routing too; it is replaced, not doubled.
  app.server.removeAllListeners('request')
  app.server.on('request', take)
  // Without a listener Node answers 417 itself; with one, the request is ours.
  app.server.on('checkExpectation', take)
  // Without a listener Node closes the connection without a word.
  app.server.on('connect', (_request: IncomingMessage, socket: Duplex) => { answerRaw(socket, Errors.notAProxy()) })
  // Every request is checked here, whatever its scope. A request the gate
  // checked (under /v1, after its limits) arrives here only if it passed, so
  // the check is decided by what ran, not by guessing the scope from the URL:
  // the OpenAPI document and the docs page are under /v1 but not gated.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const unmet = unmetFraming(request)
    if (unmet === undefined) done(null, payload)
    else done(unmet)
  })
}, { name: 'framing' })
