// The admin API's operations on keys (docs/KEYS.md: The admin API). The admin
// token has been checked (plugins/admin-auth.ts) and the request validated
// before a handler runs; handlers call keys/manage.ts, the same functions
// as the `petstore keys` commands, and shape the answer; their refusals
// become the admin API's errors in plugins/errors.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchema } from 'fastify'
import type { KeyStore, LeakStore, StoreConnection, UsageStore } from '../db/storage.js'
import type { Environment } from '../domain.js'
import {
  findKey, issueKey, keyUsage, revokeKey, rollKey, showKey, updateKey, type KeyUpdate
} from '../keys/manage.js'
import {
  DEFAULT_KEY_PAGE_SIZE, FoundKey, Key, KeyChanges, KeyIdParams, KeyUsageDays, KeyWithToken, Keys, ListKeysQuery, NewKey, RollRequest, TokenLookup, UsageQuery
} from '../schemas/key.js'
import { searchKeys } from '../keys/overview.js'
import { readInstant } from '../instant.js'
import { Type } from '../schemas/typebox.js'
import { adminAnswers } from '../schemas/responses.js'
import { ADMIN_PREFIX } from '../plugins/admin-openapi.js'
import { ADMIN_AUTH_ANSWERS } from '../plugins/admin-auth.js'
import { FRAMING_ANSWERS } from '../plugins/framing.js'
import { statusesOf } from '../errors.js'

interface AdminKeyRoutesOptions {
  storage: KeyStore & UsageStore & LeakStore & Pick<StoreConnection, 'secret'>
  environment: Environment
  now: () => number
}

/** Statuses every operation may answer besides its own: the token check's, the framing check's after it (no Host, an Expect it cannot meet), faults. */
export const ALWAYS = statusesOf([...ADMIN_AUTH_ANSWERS, ...FRAMING_ANSWERS, 'internal_error', 'service_unavailable'])
/** And those with a body: bad JSON or fields, a body too large or not JSON. */
const WITH_BODY = [...ALWAYS, 400, 413, 415]

/** Relative to the listener, whose address the instance cannot know (plugins/admin-openapi.ts). */
const NEXT_KEYS = {
  Link: Type.String({ maxLength: 3000, pattern: '^<[^<>\\s]+>; *rel="next"$', description: 'Present when more keys follow: `</admin/v1/keys?limit=…&cursor=…>; rel="next"`, the next page, relative to this listener.' })
}

/** An operation of the admin API, listed under the `keys` tag of its document. */
export function keysOperation<S extends FastifySchema> (schema: S): S & { tags: string[] } {
  return { ...schema, tags: ['keys'] }
}

/** An operation on the one key whose id is in its path (`/keys/:id…`). */
function oneKeyOperation<S extends FastifySchema> (schema: S): S & { tags: string[], params: typeof KeyIdParams } {
  return { ...keysOperation(schema), params: KeyIdParams }
}

const adminKeyRoutes: FastifyPluginAsyncTypebox<AdminKeyRoutesOptions> = async (app, { storage, environment, now }) => {
  app.post('/keys', {
    schema: keysOperation({
      operationId: 'createKey',
      summary: 'Make a key',
      description: 'Makes an API key of this service\'s environment. Its token is in this answer only: store it now.',
      body: NewKey,
      response: adminAnswers(201, KeyWithToken, 'The key, and its token.', WITH_BODY)
    })
  }, async (request, reply) => {
    const { plan, name, perMinute, perDay, concurrency, scopes, expiresAt } = request.body
    const key = await issueKey(storage, {
      plan,
      name: name ?? '',
      perMinute: number(perMinute),
      perDay: number(perDay),
      concurrency: number(concurrency),
      scopes,
      expiresAt: expiresAt === undefined ? null : instant(expiresAt),
      environment,
      now: now()
    })
    return reply.code(201).send(key)
  })

  app.get('/keys', {
    schema: keysOperation({
      operationId: 'listKeys',
      summary: 'List keys',
      description: 'Every key, revoked and expired ones too, ordered by id, or by last use with `sort=lastUsed`; `q`, `state` and `plan` keep only the keys that match. When more follow, the `Link` header has the URL of the next page.',
      querystring: ListKeysQuery,
      response: adminAnswers(200, Keys, 'A page of keys.', [...ALWAYS, 400], NEXT_KEYS)
    })
  }, async (request, reply) => {
    const { limit = DEFAULT_KEY_PAGE_SIZE, cursor, q, state, plan, sort } = request.query
    const { keys, next } = await searchKeys(storage, now(), { limit, cursor, search: q, state, plan, sort })
    if (next !== undefined) {
      const query = new URLSearchParams({ limit: String(limit) })
      for (const [name, value] of Object.entries({ q, state, plan, sort })) if (value !== undefined) query.set(name, value)
      query.set('cursor', next)
      reply.header('link', `<${ADMIN_PREFIX}/keys?${query.toString()}>; rel="next"`)
    }
    return keys
  })

  app.get('/keys/:id', {
    schema: oneKeyOperation({
      operationId: 'getKey',
      summary: 'Get a key',
      response: adminAnswers(200, Key, 'The key.', [...ALWAYS, 400, 404])
    })
  }, async (request) => await showKey(storage, request.params.id, now()))

  app.patch('/keys/:id', {
    schema: oneKeyOperation({
      operationId: 'updateKey',
      summary: 'Change a key',
      description: 'Changes the fields sent; `expiresAt: null` takes the expiry away, and a limit or `concurrency` set to null goes back to the plan\'s. Every instance applies the change within one second. A revoked key cannot be changed (409).',
      body: KeyChanges,
      response: adminAnswers(200, Key, 'The key as changed.', [...WITH_BODY, 404, 409])
    })
  }, async (request) => {
    const { name, plan, perMinute, perDay, concurrency, scopes, expiresAt } = request.body
    const update: KeyUpdate = {
      name,
      plan,
      scopes,
      perMinute: perMinute === null ? null : number(perMinute),
      perDay: perDay === null ? null : number(perDay),
      concurrency: concurrency === null ? null : number(concurrency),
      expiresAt: expiresAt === undefined ? undefined : expiresAt === null ? null : instant(expiresAt)
    }
    return await updateKey(storage, request.params.id, update, now())
  })

  app.post('/keys/:id/roll', {
    schema: oneKeyOperation({
      operationId: 'rollKey',
      summary: 'Roll a key',
      description: 'Gives the key a new token, in this answer only. The current token keeps working for `expireCurrentInSeconds`; both are the same key (same id, limits, counters, ban, scopes), and rolling never resets a quota or lifts a ban. A revoked key cannot be rolled (409).',
      body: RollRequest,
      response: adminAnswers(201, KeyWithToken, 'The key, and its new token.', [...WITH_BODY, 404, 409])
    })
  }, async (request, reply) => {
    const key = await rollKey(storage, request.params.id, Number(request.body.expireCurrentInSeconds), now())
    return reply.code(201).send(key)
  })

  app.delete('/keys/:id', {
    schema: oneKeyOperation({
      operationId: 'revokeKey',
      summary: 'Revoke a key',
      description: 'Both its tokens are refused by every instance within one second. Revoking a revoked key changes nothing and answers the same.',
      // Content sent with a DELETE is read as any body (400, 413, 415), then ignored.
      response: adminAnswers(200, Key, 'The key, revoked.', [...WITH_BODY, 404])
    })
  }, async (request) => await revokeKey(storage, request.params.id, now()))

  app.get('/keys/:id/usage', {
    schema: oneKeyOperation({
      operationId: 'getKeyUsage',
      summary: 'A key\'s requests per day',
      description: 'The key\'s admitted and refused requests per UTC day, from `from` to `to`, both included (default: the last 30 days), one row per day, zeros included, oldest first.',
      querystring: UsageQuery,
      response: adminAnswers(200, KeyUsageDays, 'The key\'s requests per day.', [...ALWAYS, 400, 404])
    })
  }, async (request) => await keyUsage(storage, request.params.id, request.query, now()))

  app.post('/keys/lookup', {
    schema: keysOperation({
      operationId: 'findKeyByToken',
      summary: 'Find the key of a token',
      description: 'The key a token belongs to, whatever the key\'s state: by its current token, its previous one, or any it was rolled away from (an alert may come after the roll). The step between a leaked-secret alert and revoking the key. The token is sent in the body, never in the URL, which logs keep.',
      body: TokenLookup,
      response: adminAnswers(200, FoundKey, 'The key the token belongs to, and which of its tokens it is.', [...WITH_BODY, 404])
    })
  }, async (request) => {
    const found = await findKey(storage, request.body.token, now())
    return { ...found.key, matchedToken: found.matchedToken }
  })
}

/** A body's integer, within bounds its schema has checked. */
function number (value: bigint | undefined): number | undefined {
  return value === undefined ? undefined : Number(value)
}

/** The schema has checked the text; this is its instant. */
function instant (text: string): number {
  const reading = readInstant(text)
  if (!reading.ok) throw new Error(`a validated time does not parse: ${text}`)
  return reading.at
}

export default adminKeyRoutes
