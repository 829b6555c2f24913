// What both listeners (app.ts, admin.ts) do with every request and answer,
// written once: every method is routable, our validator, the request id on
// every answer, no type sniffing and no caching of JSON (docs/INTERNALS.md,
// section "Answers").
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ANSWER_HEADERS, JSON_ANSWER_HEADERS, bodyUnread } from './edge.js'
import { compileValidator, type HttpPart } from '../schemas/validator.js'

/** `closesConnection`: whether an answer ends its keep-alive connection for another reason (the public listener's, while closing). */
export function setUpAnswers (app: FastifyInstance, closesConnection: (request: FastifyRequest) => boolean = () => false): void {
  routeEveryMethod(app)
  app.setValidatorCompiler(({ schema, httpPart }) =>
    compileValidator(schema as Parameters<typeof compileValidator>[0], (httpPart ?? 'body') as HttpPart))
  // Hooks with nothing to wait for take a callback: an async hook costs
  // every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    // A DELETE without content has no body to parse, whatever its
    // Content-Type says: clients that send `Content-Type: application/json`
    // on every request would otherwise get 400 invalid_json (an empty body)
    // or 415. A DELETE with content is parsed as any body, and ignored.
    if (request.method === 'DELETE' && !hasContent(request)) delete request.headers['content-type']
    done()
  })
  // In onSend, it reaches every answer Fastify sends, errors included, save
  // the router's 400 (`frameworkErrors`, which calls routerAnswerHeaders).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closesConnection(request) || bodyUnread(request.raw)) reply.header('connection', 'close')
    reply.headers(String(reply.getHeader('content-type')).startsWith('application/json') ? JSON_ANSWER_HEADERS : ANSWER_HEADERS)
    done(null, payload)
  })
}

/** What onSend would set on the router's own JSON answer (`frameworkErrors`), on which Fastify runs no hook. */
export function routerAnswerHeaders (request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id).headers(JSON_ANSWER_HEADERS)
  if (bodyUnread(request.raw)) reply.header('connection', 'close')
}

/** Whether a request carries content (RFC 9112 §6.3): chunked, or a length above 0. */
function hasContent (request: FastifyRequest): boolean {
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** Makes every method that Node's parser accepts (PROPFIND, LOCK, …) routable, so that none falls through to the 404 handler (routes/method-not-allowed.ts answers 405). */
function routeEveryMethod (app: FastifyInstance): void {
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method)
  }
}
