// One error model for every error, whoever raises it: our handlers, Fastify
// (bad JSON, body too large, wrong media type, validation), or Node's HTTP
// parser (before a request exists at all).
import { STATUS_CODES } from 'node:http'
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
 * Some answers happen before Fastify has a request (Node's parser failed,
 * or a CONNECT): they are written to the socket by hand, in the same Error
 * shape. The path is not known: each is counted against the client's
 * address and carries that limit's headers, as /v1 responses do.
 */
export function createRawAnswerer (countAddress: CountAddress): AnswerRaw {
  return (socket, answer) => {
    if (!socket.writable) {
      socket.destroy()
      return
    }
    const status = answer.status
    const body = JSON.stringify(errorBody(answer))
    const write = (headers: Record<string, string>): void => {
      if (!socket.writable) return
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
    countAddress(address).then(write, () => write({}))
  }
}

/** Errors from Node's HTTP parser. https://nodejs.org/api/http.html#event-clienterror */
export function createClientErrorHandler (answerRaw: AnswerRaw): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => { answerRaw(socket, (PARSER_ERRORS[error.code ?? ''] ?? Errors.invalidHttp)()) }
}
