// The three operations on animals. Authentication, rate limits and
// validation have happened before a handler runs; handlers call the
// service and shape the answer.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { CreatePetHeaders, ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from '../schemas/pet.js'
import {
  DEPRECATION_HEADERS, IDEMPOTENT_REPLAYED, NEXT_LINK, RATE_LIMIT_HEADERS, errorResponses, withHeaders
} from '../schemas/responses.js'
import type { PetService } from '../pets/service.js'
import { DEFAULT_PAGE_SIZE } from '../domain.js'
import { Errors } from '../errors.js'
import { callerOf, gateStatuses } from '../plugins/gate.js'
import { GET_PET_DEPRECATION } from '../deprecations.js'

interface PetRoutesOptions {
  pets: PetService
  /** This instance's own address, ending in /v1. */
  baseUrl: () => string
}

/** Statuses every operation may answer besides its own: the gate's, and a fault of ours. */
const ALWAYS = [...gateStatuses({ scoped: true }), 500]

const petRoutes: FastifyPluginAsyncTypebox<PetRoutesOptions> = async (app, { pets, baseUrl }) => {
  app.get('/pets', {
    config: { scope: 'pets:read' },
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'Animals ordered by id, optionally filtered by status. When more follow, the `Link` header has the URL of the next page.',
      tags: ['pets'],
      querystring: ListPetsQuery,
      response: {
        200: withHeaders(Pets, 'A page of animals.', { ...RATE_LIMIT_HEADERS, ...NEXT_LINK }),
        ...errorResponses(ALWAYS, RATE_LIMIT_HEADERS)
      }
    }
  }, async (request, reply) => {
    const page = await pets.list(request.query)
    if (page.nextCursor !== undefined) {
      const next = new URLSearchParams()
      next.set('limit', String(request.query.limit ?? DEFAULT_PAGE_SIZE))
      if (request.query.status !== undefined) next.set('status', request.query.status)
      next.set('cursor', page.nextCursor)
      reply.header('link', `<${baseUrl()}/pets?${next.toString()}>; rel="next"`)
    }
    if (Buffer.isBuffer(page.pets)) return await sendWrittenJson(reply, page.pets)
    return page.pets
  })

  app.post('/pets', {
    config: { scope: 'pets:write' },
    schema: {
      operationId: 'createPet',
      summary: 'Add an animal',
      description: 'Adds an animal; the 201 is sent once it is durably stored. Send an `Idempotency-Key` to make retries safe.',
      tags: ['pets'],
      headers: CreatePetHeaders,
      body: NewPet,
      response: {
        201: withHeaders(Pet, 'Animal added (or, with `Idempotent-Replayed: true`, added by an earlier request with the same Idempotency-Key).', { ...RATE_LIMIT_HEADERS, ...IDEMPOTENT_REPLAYED }),
        ...errorResponses([...ALWAYS, 409, 413, 415, 422], RATE_LIMIT_HEADERS)
      }
    },
    // A body with no Content-Type at all is a 415 too, not an empty body.
    // A callback hook: an async one costs every create a promise.
    preParsing: (request, _reply, payload, done) => {
      if (request.headers['content-type'] === undefined) done(Errors.notJson())
      else done(null, payload)
    }
  }, async (request, reply) => {
    const { pet, replayed } = await pets.create(request.body, {
      apiKeyId: callerOf(request).key.id,
      idempotencyKey: idempotencyKey(request.headers['idempotency-key'], request.raw.rawHeaders)
    })
    if (replayed) reply.header('idempotent-replayed', 'true')
    return reply.code(201).send(pet)
  })

  app.get('/pets/:petId', {
    config: { scope: 'pets:read', deprecation: GET_PET_DEPRECATION },
    schema: {
      operationId: GET_PET_DEPRECATION.operationId,
      summary: 'Get an animal (deprecated)',
      description: 'Deprecated: removed on 5 December 2030, after which it answers 410; before then it answers 410 during scheduled brownouts too, with `Retry-After` until the brownout ends. Use `GET /pets` with a `status` filter instead.',
      tags: ['pets'],
      deprecated: true,
      params: PetIdParams,
      response: {
        200: withHeaders(Pet, 'The animal.', { ...RATE_LIMIT_HEADERS, ...DEPRECATION_HEADERS }),
        ...errorResponses([...ALWAYS, 404, 410], { ...RATE_LIMIT_HEADERS, ...DEPRECATION_HEADERS })
      }
    }
  }, async (request, reply) => {
    const pet = await pets.get(request.params.petId)
    if (Buffer.isBuffer(pet)) return await sendWrittenJson(reply, pet)
    return pet
  })
}

/** What Fastify's serializer labels its JSON with. */
const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * Sends JSON the storage already wrote (a kept page or animal) as the
 * serializer would have. Fastify sends a Buffer as it is, labelled as bytes;
 * a plain reply takes one, where the schema-typed reply takes only the schema's type.
 */
function sendWrittenJson (reply: FastifyReply, json: Buffer): FastifyReply {
  return reply.type(JSON_TYPE).send(json)
}

/**
 * The IETF draft sends the key as a structured-field string ("…"); a bare
 * token is accepted too. Node joins a header sent twice with ", ", which a
 * key may itself hold, so the raw headers are counted: two keys are refused,
 * never merged into a third.
 */
function idempotencyKey (header: string | undefined, rawHeaders: string[]): string | undefined {
  if (header === undefined) return undefined
  let sent = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === 'idempotency-key') sent++
  }
  if (sent > 1) throw Errors.repeatedIdempotencyKey()
  const match = /^"((?:[^"\\]|\\["\\])*)"$/.exec(header)
  const key = match?.[1] === undefined ? header : match[1].replace(/\\(["\\])/g, '$1')
  if (key.length < 1 || key.length > 255) {
    throw Errors.invalidIdempotencyKey()
  }
  return key
}

export default petRoutes
