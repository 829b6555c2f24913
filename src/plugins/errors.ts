// One error model for every error, whoever raises it: our handlers, Fastify
// (bad JSON, body too large, wrong media type, validation), or Node's HTTP
// parser (before a request exists at all).
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import fp from 'fastify-plugin'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, Errors, StorageUnavailableError, errorBody } from '../errors.js'
import { JsonBodyError } from '../json.js'
import { toDetails, type ValidationIssue } from '../schemas/validator.js'

/**
 * Fastify's own error codes that reach the error handler, in the
 * catalogue's terms. (Router errors go to `frameworkErrors` in app.ts; the
 * JSON parser is ours and throws JsonBodyError.)
 */
const FASTIFY_CODES: Record<string, () => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: Errors.payloadTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: Errors.notJson,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: Errors.contentLengthMismatch
}

const PARTS: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

export function toApiError (error: FastifyError | Error): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (error instanceof JsonBodyError) return Errors.invalidJson(error.message)
  if (error instanceof StorageUnavailableError) return Errors.storageUnavailable()
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    const part = PARTS[fastifyError.validationContext ?? 'body'] ?? 'body'
    const details = toDetails(part, fastifyError.validation as unknown as ValidationIssue[])
    const summary = details.map((d) => `${d.field} ${d.reason}`).join('; ')
    return Errors.invalidRequest(summary, details)
  }
  const known = fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]
  if (known !== undefined) return known()
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) return Errors.invalidRequestUnspecified()
  return undefined
}

declare module 'fastify' {
  interface FastifyReply {
    /** The error code this response carries, for the request's log line. */
    errorCode: string | undefined
    /** What made this a 5xx, for the request's log line; never sent. */
    failure: unknown
  }
}

export function sendError (reply: FastifyReply, error: ApiError): FastifyReply {
  reply.errorCode = error.code
  return reply.code(error.status).headers(error.headers).type('application/json').send(errorBody(error))
}

export default fp(async function errors (app) {
  app.decorateReply('errorCode', undefined)
  app.decorateReply('failure', undefined)
  app.setErrorHandler((error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
    const known = toApiError(error)
    if (known === undefined || known.status >= 500) reply.failure = error
    return sendError(reply, known ?? Errors.internal())
  })

  app.setNotFoundHandler((request, reply) => sendError(reply, Errors.notFound(request.method, request.url)))
}, { name: 'errors' })

const PARSER_ERRORS: Record<string, () => ApiError> = {
  HPE_HEADER_OVERFLOW: Errors.headersTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: Errors.requestTimeout
}

/** Counts a request that never became one against its client address, and gives the rate-limit headers to send. */
export type CountAddress = (address: string) => Promise<Record<string, string>>

/** Answers, by hand, a socket that never became a request: the Error body, that address's rate-limit headers, then close. */
export type AnswerRaw = (socket: Duplex, answer: ApiError) => void

/** How long a socket answered by hand is kept open for its client to read the answer and close. */
const LINGER_MS = 1_000

/**
 * Responses each connection still owes. A client may pipeline requests
 * (RFC 9112 §9.3.2): when one the parser refuses follows others, their
 * answers go out first, in order, and the refusal after them; written at
 * once, it would take the place of the first request's answer. A request
 * whose own bytes have not all arrived (the one that timed out, or whose
 * body the parser refused) is owed nothing more: its refusal is its
 * answer, or, when it was answered already (a 401 or 405 is sent before
 * the body is read), the connection just closes.
 */
interface Connection {
  owed: Set<IncomingMessage>
  /** The connection's latest request and its response. */
  latest: { request: IncomingMessage, response: ServerResponse } | undefined
  then: (() => void) | undefined
}

const connections = new WeakMap<Duplex, Connection>()

/** Counts a request's response as owed on its connection until it has been sent (or the connection lost). */
export function owe (request: IncomingMessage, response: ServerResponse): void {
  const socket = request.socket
  const connection = connections.get(socket) ?? { owed: new Set(), latest: undefined, then: undefined }
  connections.set(socket, connection)
  connection.latest = { request, response }
  connection.owed.add(request)
  response.once('close', () => {
    connection.owed.delete(request)
    if (waitsFor(connection.owed)) return
    const then = connection.then
    connection.then = undefined
    then?.()
  })
}

function waitsFor (owed: Set<IncomingMessage>): boolean {
  for (const request of owed) if (request.complete) return true
  return false
}

/** True when the request being refused (the latest, not all arrived) has been given its answer already. */
function refusedWasAnswered (socket: Duplex): boolean {
  const latest = connections.get(socket)?.latest
  return latest !== undefined && !latest.request.complete && (latest.response.headersSent || latest.response.writableEnded)
}

/** Closes the connection once the latest response has gone out whole, as Node does after a last response. */
function closeAfterLatest (socket: Duplex): void {
  const response = connections.get(socket)?.latest?.response
  const close = (): void => {
    const net = socket as Partial<Socket>
    if (typeof net.destroySoon === 'function') net.destroySoon()
    else socket.end()
  }
  if (response === undefined || response.closed) close()
  else response.once('close', close)
}

/**
 * Runs `answer` once the answers owed before a refusal have gone, or
 * `close` when the refused request has had its own answer by then (the
 * gate answers 401 without reading the body, possibly while earlier
 * answers were still going).
 */
function whenOwedSent (socket: Duplex, answer: () => void, close: () => void): void {
  const connection = connections.get(socket)
  const then = (): void => { if (refusedWasAnswered(socket)) close(); else answer() }
  if (connection === undefined || !waitsFor(connection.owed)) then()
  else connection.then = then
}

/**
 * Some answers happen before Fastify has a request (Node's parser failed,
 * or a CONNECT): they are written to the socket by hand, in the same Error
 * shape, once the answers owed before them have gone. The path is not
 * known: each is counted against the client's address and carries that
 * limit's headers, as /v1 responses do.
 */
export function createRawAnswerer (countAddress: CountAddress): AnswerRaw {
  // A parser that has failed keeps failing on whatever follows: one answer per connection.
  const answered = new WeakSet<Duplex>()
  return (socket, answer) => {
    if (answered.has(socket)) return
    answered.add(socket)
    const status = answer.status
    const body = JSON.stringify(errorBody(answer))
    const write = (headers: Record<string, string>): void => {
      if (refusedWasAnswered(socket)) {
        closeAfterLatest(socket)
        return
      }
      if (!socket.writable) {
        socket.destroy()
        return
      }
      const extra = Object.entries({ ...answer.headers, ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`)
      // end() only half-closes (Node's HTTP server allows half-open
      // sockets): a client that never closes its side would hold the socket
      // until the idle-socket timeout, 120 s. It gets a moment to read the
      // answer; then the socket is closed whatever it does.
      const linger = setTimeout(() => socket.destroy(), LINGER_MS)
      linger.unref()
      socket.once('close', () => clearTimeout(linger))
    }
    const address = (socket as Partial<Socket>).remoteAddress ?? ''
    // One answer per request: a second one would pass for the next request's.
    whenOwedSent(socket, () => { countAddress(address).then(write, () => write({})) }, () => { closeAfterLatest(socket) })
  }
}

/** Errors from Node's HTTP parser. https://nodejs.org/api/http.html#event-clienterror */
export function createClientErrorHandler (answerRaw: AnswerRaw): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => { answerRaw(socket, (PARSER_ERRORS[error.code ?? ''] ?? Errors.invalidHttp)()) }
}
