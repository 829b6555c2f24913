// One error model for every error Fastify's lifecycle meets, whoever raises
// it: our handlers and the gate, or Fastify (bad JSON, body too large, wrong
// media type, validation). Answers given before Fastify has a request are
// the edge's (edge.ts), in the same Error body.
import fp from 'fastify-plugin'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, Errors, StorageUnavailableError, errorBody } from '../errors.js'
import { JsonBodyError } from './json.js'
import { KeyRevokedError, KeyRuleError, NoSuchKeyError, UnknownTokenError } from '../keys/manage.js'
import { DeliveryPendingError, NoSuchDeliveryError, NoSuchWebhookError, WebhookRuleError } from '../webhooks/manage.js'
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

/**
 * Errors without a code of their own, by their status: the known ones
 * (docs/INTERNALS.md, section "Errors") are invalid requests; any other
 * status is not guessed at: it is a 500, logged with its cause.
 */
const STATUS_ERRORS: Record<number, () => ApiError> = {
  400: Errors.invalidRequestUnspecified,
  403: Errors.invalidRequestUnspecified,
  412: Errors.invalidRequestUnspecified,
  416: Errors.invalidRequestUnspecified
}

const PARTS: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

export function toApiError (error: FastifyError | Error): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (error instanceof JsonBodyError) return Errors.invalidJson(error.message)
  if (error instanceof StorageUnavailableError) return Errors.storageUnavailable()
  const ofKeys = keyError(error)
  if (ofKeys !== undefined) return ofKeys
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    const part = PARTS[fastifyError.validationContext ?? 'body'] ?? 'body'
    const details = toDetails(part, fastifyError.validation as unknown as ValidationIssue[])
    const summary = details.map((d) => `${d.field} ${d.reason}`).join('; ')
    return Errors.invalidRequest(summary, details)
  }
  const known = fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]
  if (known !== undefined) return known()
  const byStatus = fastifyError.statusCode === undefined ? undefined : STATUS_ERRORS[fastifyError.statusCode]
  return byStatus?.()
}

/** The refusals of keys/manage.ts and webhooks/manage.ts, the same for the admin API and the CLI, in the catalogue's terms. */
function keyError (error: Error): ApiError | undefined {
  if (error instanceof KeyRuleError) {
    const field = `${error.where}.${error.field}`
    return Errors.invalidRequest(`${field} ${error.reason}`, [{ field, reason: error.reason }])
  }
  if (error instanceof KeyRevokedError) return Errors.keyRevoked(error.message)
  if (error instanceof NoSuchKeyError || error instanceof UnknownTokenError) return Errors.noSuchKey(error.message)
  if (error instanceof WebhookRuleError) {
    const field = `body.${error.field}`
    return Errors.invalidRequest(`${field} ${error.reason}`, [{ field, reason: error.reason }])
  }
  if (error instanceof NoSuchWebhookError) return Errors.noSuchWebhook(error.message)
  if (error instanceof NoSuchDeliveryError) return Errors.noSuchDelivery(error.message)
  if (error instanceof DeliveryPendingError) return Errors.deliveryPending(error.message)
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
