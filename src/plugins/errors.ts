// One error model for every error, whoever raises it: our handlers, Fastify
// (bad JSON, body too large, wrong media type, validation), or Node's HTTP
// parser (before a request exists at all).
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, ERROR_STATUS, StorageUnavailableError, clip, errorBody, type ErrorCode } from '../errors.js'
import { JsonBodyError } from '../json.js'
import { toDetails, type ValidationIssue } from '../schemas/validator.js'

/**
 * Fastify's own error codes that reach the error handler, in the
 * catalogue's terms. (Router errors go to `frameworkErrors` in app.ts; the
 * JSON parser is ours and throws JsonBodyError.)
 */
const FASTIFY_CODES: Record<string, () => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ApiError('payload_too_large', 'The body is larger than 16 KiB.'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ApiError('invalid_request', 'Content-Length does not match the body.')
}

const PARTS: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

export function toApiError (error: FastifyError | Error): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (error instanceof JsonBodyError) return new ApiError('invalid_json', `The body is not valid JSON: ${error.message}`)
  if (error instanceof StorageUnavailableError) return storageUnavailable()
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    const part = PARTS[fastifyError.validationContext ?? 'body'] ?? 'body'
    const details = toDetails(part, fastifyError.validation as unknown as ValidationIssue[])
    const summary = details.map((d) => `${d.field} ${d.reason}`).join('; ')
    return new ApiError('invalid_request', `The request is not valid: ${clip(summary, 1000)}.`, { details })
  }
  const known = fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]
  if (known !== undefined) return known()
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) return new ApiError('invalid_request', 'The request is not valid.')
  return undefined
}

export function storageUnavailable (): ApiError {
  return new ApiError('service_unavailable', 'The service cannot reach its database; retry shortly.', { headers: { 'retry-after': '5' } })
}

export function unsupportedMediaType (): ApiError {
  return new ApiError('unsupported_media_type', 'Send the body as Content-Type: application/json.')
}

export function notFound (request: FastifyRequest): ApiError {
  return new ApiError('not_found', `Nothing is at ${request.method} ${clip(request.url.split('?')[0] ?? '', 200)}.`)
}

export function sendError (reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.status).headers(error.headers).type('application/json').send(errorBody(error))
}

export default fp(async function errors (app) {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const known = toApiError(error)
    if (known !== undefined) {
      if (known.status >= 500) request.log.error({ err: error }, 'request failed')
      return sendError(reply, known)
    }
    request.log.error({ err: error }, 'unexpected error')
    return sendError(reply, new ApiError('internal_error', 'Something went wrong on our side; the error was logged.'))
  })

  app.setNotFoundHandler((request, reply) => sendError(reply, notFound(request)))
}, { name: 'errors' })

const PARSER_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['request_header_fields_too_large', 'The request headers are too large.'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'The request took too long to arrive.']
}

/** Counts a request that never became one against its client address, and gives the rate-limit headers to send. */
export type CountAddress = (address: string) => Promise<Record<string, string>>

/**
 * Errors from Node's HTTP parser happen before Fastify has a request, so the
 * answer is written to the socket by hand, in the same Error shape. The
 * path is not known yet: every such answer is counted against the client's
 * address and carries that limit's headers, as /v1 responses do.
 * https://nodejs.org/api/http.html#event-clienterror
 */
export function createClientErrorHandler (countAddress: CountAddress): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (!socket.writable) {
      socket.destroy()
      return
    }
    const [code, message] = PARSER_ERRORS[error.code ?? ''] ?? ['invalid_request', 'The request is not valid HTTP/1.1.']
    const status = ERROR_STATUS[code]
    const body = JSON.stringify({ code, message, status })
    const answer = (headers: Record<string, string>): void => {
      if (!socket.writable) return
      const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`)
    }
    countAddress(socket.remoteAddress ?? '').then(answer, () => answer({}))
  }
}
