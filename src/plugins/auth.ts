// Who is calling. Every /v1 request is identified first (so the rate limiter
// knows whom to count), and refused with 401 after it has been counted.
// https://www.rfc-editor.org/rfc/rfc6750#section-3
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import type { Environment } from '../config.js'
import type { ApiKeyRecord, Storage } from '../db/storage.js'
import { hashToken, inspectToken } from '../keys/tokens.js'
import { limitsFor, type Limits } from '../limits/plans.js'

export interface Caller {
  key: ApiKeyRecord
  limits: Limits
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key of this request, once authenticated. */
    caller: Caller | undefined
    /** Why the request has no caller: the 401 it gets once it has been counted. */
    authFailure: ApiError | undefined
  }
}

export interface AuthOptions {
  storage: Storage
  environment: Environment
  now: () => number
}

/** A revoked key is refused by every instance within this long. */
const CACHE_MS = 500
const CACHE_MAX = 10_000
const BEARER = /^Bearer +([^ ]+) *$/i
const REALM = 'Bearer realm="petstore"'

export default fp<AuthOptions>(async function auth (app, { storage, environment, now }) {
  const cache = new Map<string, { caller: Caller | undefined, expires: number }>()

  async function findCaller (tokenHash: string): Promise<Caller | undefined> {
    const time = now()
    const hit = cache.get(tokenHash)
    if (hit !== undefined && hit.expires > time) return hit.caller
    const key = await storage.findApiKeyByTokenHash(tokenHash)
    const caller = key === undefined || key.revokedAt !== null || key.environment !== environment
      ? undefined
      : { key, limits: limitsFor(key.plan, key) }
    if (cache.size >= CACHE_MAX) cache.clear()
    cache.set(tokenHash, { caller, expires: time + CACHE_MS })
    return caller
  }

  async function identify (request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      request.authFailure = new ApiError('missing_api_key', 'Send your API key as Authorization: Bearer <API_KEY>.', {
        headers: { 'www-authenticate': REALM }
      })
      return
    }
    const token = BEARER.exec(header)?.[1]
    if (token === undefined) {
      request.authFailure = new ApiError('missing_api_key', 'The Authorization header must use the Bearer scheme: Authorization: Bearer <API_KEY>.', {
        headers: { 'www-authenticate': REALM }
      })
      return
    }
    const refused = (message: string): ApiError => new ApiError('invalid_api_key', message, {
      headers: { 'www-authenticate': `${REALM}, error="invalid_token", error_description="${message.replace(/"/g, "'")}"` }
    })
    const shape = inspectToken(token)
    if (!shape.ok) {
      request.authFailure = refused('The API key is not a petstore key; check that it was copied whole.')
      return
    }
    if (shape.environment !== environment) {
      request.authFailure = refused(`This is a ${shape.environment} API key; this is the ${environment} service.`)
      return
    }
    request.caller = await findCaller(hashToken(token))
    if (request.caller === undefined) request.authFailure = refused('The API key is unknown or has been revoked.')
  }

  app.decorateRequest('caller', undefined)
  app.decorateRequest('authFailure', undefined)

  app.addHook('onRequest', identify)

  // After the rate limiter (an onRequest hook), before the body is read.
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (request.authFailure !== undefined) throw request.authFailure
    return payload
  })
}, { name: 'auth' })
