// The OpenAPI 3.1 document, generated from the route schemas that validate
// requests, and the docs page built from it; neither needs a key or is rate
// limited. What recurs is written once under `components`, so that generators
// give it names.
import { STATUS_CODES } from 'node:http'
import { isDeepStrictEqual } from 'node:util'
import fp from 'fastify-plugin'
import swagger, { type SwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifySchema } from 'fastify'
import { stringify } from 'lossless-json'
import { ErrorBody } from '../schemas/error.js'
import { INT64_MAX, type JsonSchema as TSchema } from '../schemas/kinds.js'
import { NewPet, Pet, PetStatus, Pets } from '../schemas/pet.js'
import { HEADERS, REQUEST_ID_PARAMETER } from '../schemas/responses.js'
import { RateLimitStatus, WindowStanding } from '../schemas/rate-limit.js'
import { CredentialsRevocation, RevocationAccepted, ScanLabels, ScanReport } from '../schemas/leak.js'
import { WEBHOOK_HEADERS, WebhookTestData, eventSchema, eventSchemaName, type DeliveredType } from '../schemas/event.js'
import type { Config } from '../config.js'

/** The named schemas; each one's `$id` is its name under `components.schemas`. */
const SCHEMAS: TSchema[] = [Pet, NewPet, Pets, PetStatus, RateLimitStatus, WindowStanding, ScanReport, ScanLabels, CredentialsRevocation, RevocationAccepted, ErrorBody, WebhookTestData]

/**
 * The events a partner's endpoint receives: animals added, and the test an
 * operator may send to any endpoint. The key and quota events are the
 * operators', in the admin document: their data is the admin API's Key.
 */
const WEBHOOKS: DeliveredType[] = ['pet.created', 'webhook.test']

interface OpenApiOptions {
  config: Pick<Config, 'environment' | 'publicBaseUrl' | 'stagingBaseUrl'>
  /** This instance's own address: with PORT=0, known only once listening. */
  baseUrl: () => string
}

/** What the docs page's own scripts find in the browser. */
interface DocsPageGlobals {
  location: { href: string }
  SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => ReturnType<SwaggerUiPlugin> } }
}
type SwaggerUiPlugin = NonNullable<NonNullable<Parameters<typeof swaggerUi>[1]['uiConfig']>['plugins']>[number]

/**
 * Swagger UI plugins, sent to the browser as source text (so they use nothing
 * from this module), that make the page load and link /v1/openapi.json, relative
 * to the page so it holds behind a proxy's path prefix (docs/INTERNALS.md, section "OpenAPI").
 */
const DOCS_PAGE_PLUGINS: SwaggerUiPlugin[] = [
  function downloadUrl (system) {
    return (globalThis as unknown as DocsPageGlobals).SwaggerUIBundle.plugins.DownloadUrl(system)
  },
  function documentAtItsOwnAddress () {
    const base = (globalThis as unknown as DocsPageGlobals).location.href.split('#', 1)[0]?.split('?', 1)[0] ?? ''
    const documentUrl = new URL('../openapi.json', base.endsWith('/') ? base : `${base}/`).href
    return {
      statePlugins: {
        spec: {
          wrapActions: {
            updateUrl: (original: (url: string) => unknown) => () => original(documentUrl),
            download: (original: (url: string) => unknown) => () => original(documentUrl)
          }
        }
      }
    }
  }
]

export default fp<OpenApiOptions>(async function openapi (app, { config, baseUrl }) {
  // Both environments are public (their keys differ: `pet_live_…`, `pet_test_…`),
  // which `x-internal: false` says to tools that sort servers by audience.
  // This instance's own environment is listed at its own address (with
  // PORT=0 and no address configured, known only once listening).
  const servers = (): Array<{ url: string, description: string, 'x-internal': boolean }> => {
    const production = config.environment === 'production' ? baseUrl() : config.publicBaseUrl
    const staging = config.environment === 'staging' ? baseUrl() : config.stagingBaseUrl
    const list = [{ url: production, description: 'Production', 'x-internal': false }]
    if (staging !== undefined) list.push({ url: staging, description: 'Staging', 'x-internal': false })
    return list
  }

  await app.register(swagger, documentOptions({
    title: 'Animal Adoption Store',
    description: 'Browse and add animals available for adoption. Every operation needs an API key, sent as `Authorization: Bearer <API_KEY>`, and is rate limited per key: see the `X-RateLimit-*` headers, and wait for `Retry-After` after a 429. The two `leaks` operations, for secret scanners and for whoever holds a leaked token, need none and are limited per address.',
    servers: servers(),
    tags: [{ name: 'pets', description: 'Animals available for adoption.' }, { name: 'limits', description: 'Where a key stands against its rate limits.' }, { name: 'leaks', description: 'Leaked tokens, reported by secret scanners or given up by their holders.' }, EVENTS_TAG],
    security: { name: 'bearerAuth', description: 'An API key made by `petstore keys create`: `pet_live_…` in production, `pet_test_…` in staging.' },
    schemas: SCHEMAS,
    webhooks: WEBHOOKS
  }))

  let document: unknown
  let documentJson: string | undefined
  /** The document, with int64 bounds as exact `bigint`s (a double would round them). */
  const documentObject = (): unknown => {
    if (document === undefined) {
      document = exactBounds({ ...app.swagger(), servers: servers() })
    }
    return document
  }
  /** The document as JSON text, with int64 bounds written exactly. */
  const documentText = (): string => {
    documentJson ??= stringify(documentObject()) ?? '{}'
    return documentJson
  }

  app.get('/v1/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    return reply.type('application/json').send(documentText())
  })

  await app.register(swaggerUi, {
    routePrefix: '/v1/docs',
    staticCSP: true,
    // The page must load over plain http too (behind no TLS proxy, or on a
    // LAN address), so scripts are not forced to https
    // (https://github.com/fastify/fastify-swagger/issues/690). And since
    // every asset is served from here, the page may load nothing from
    // elsewhere: the default policy's `https:` sources go, and so does the
    // online validator's badge (the page does not use it).
    transformStaticCSP: (header) => header
      .replace(/ ?upgrade-insecure-requests;?/, '')
      .replace(/ https:/g, '')
      .replace(/ validator\.swagger\.io/g, ''),
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0, layout: 'BaseLayout', plugins: DOCS_PAGE_PLUGINS },
    theme: { title: 'Animal Adoption Store API' },
    transformSpecificationClone: false,
    // Serves /v1/docs/json and /v1/docs/yaml: the JSON as exact text; the
    // YAML written by swagger-ui from the object, whose bigints it writes exactly.
    transformSpecification: (_spec, request, reply) => {
      if (request.url.split('?')[0]?.endsWith('/yaml') === true) return documentObject() as Record<string, unknown>
      reply.type('application/json')
      return documentText() as unknown as Record<string, unknown>
    }
  })
}, { name: 'openapi' })

/**
 * JSON Schema tooling holds bounds as doubles, and the double nearest to
 * 2^63 - 1 is 2^63: each int64 bound is written back as the exact integer.
 */
export function exactBounds (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(exactBounds)
  if (typeof node !== 'object' || node === null) return node
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) copy[key] = exactBounds(value)
  if (copy.format === 'int64' && typeof copy.maximum === 'number' && copy.maximum >= 2 ** 63) copy.maximum = INT64_MAX
  return copy
}

type Json = Record<string, unknown>

interface Operation {
  parameters?: Json[]
  responses?: Record<string, Json>
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, unknown>>
  components?: Json & { responses?: Record<string, Json> }
}

const OPERATION_KEYS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** The document's own values, without TypeBox's symbols. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

const same = (a: unknown, b: unknown): boolean => isDeepStrictEqual(plain(a), plain(b))

interface Server { url: string, description: string, 'x-internal': boolean }

/** What the public and the admin documents differ in; the rest of their options is documentOptions'. */
export interface DocumentParts {
  title: string
  description: string
  servers: Server[]
  tags: Array<{ name: string, description: string }>
  /** The bearer scheme every operation needs. */
  security: { name: string, description: string }
  /** The named schemas; each one's `$id` is its name under `components.schemas`. */
  schemas: TSchema[]
  /** The events the document describes as `webhooks`; their bodies are added to the schemas. */
  webhooks: DeliveredType[]
}

/** The tag of the webhooks, in both documents. */
export const EVENTS_TAG = { name: 'events', description: 'Events the service POSTs to webhook endpoints, signed as Standard Webhooks: what a receiver is sent, and what it answers.' }

/**
 * @fastify/swagger's options for a document: the schemas and the request-id
 * parameter written once under `components`, paths relative to the server,
 * and a schema with an `$id` nested in another written as a reference to
 * `#/components/schemas/<$id>` (the default name is `def-N`).
 */
export function documentOptions ({ title, description, servers, tags, security, schemas, webhooks }: DocumentParts): SwaggerOptions {
  const named = [...schemas, ...webhooks.map(eventSchema)]
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title, version: '1.0.0', description, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
      servers,
      tags,
      components: {
        securitySchemes: { [security.name]: { type: 'http', scheme: 'bearer', description: security.description } },
        // Copies: @fastify/swagger rewrites the schemas it is given here, and
        // the routes serialize with the originals.
        schemas: Object.fromEntries(named.map((schema) => [schema.$id, plain(schema)])),
        parameters: {
          [REQUEST_ID_PARAMETER.name]: { in: 'header', name: REQUEST_ID_PARAMETER.name, required: false, ...headerObject(REQUEST_ID_PARAMETER.schema) },
          ...(webhooks.length === 0 ? {} : Object.fromEntries(WEBHOOK_HEADERS.map(({ name, schema }) => [name, { in: 'header', name, required: true, ...headerObject(schema) }])))
        }
      },
      security: [{ [security.name]: [] }],
      ...(webhooks.length === 0 ? {} : { webhooks: Object.fromEntries(webhooks.map((type) => [type, { post: webhookOperation(type) }])) })
    },
    stripBasePath: true,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}`
    },
    transform: ({ schema, url }) => ({ schema: referToRootSchemas(schema), url }),
    transformObject: (document) => 'openapiObject' in document ? referToComponents(document.openapiObject) : document.swaggerObject
  }
}

/**
 * What the service POSTs to an endpoint for one event type, and what the
 * receiver answers (docs/WEBHOOKS.md: Answers, retries and order). No API
 * key is sent: the signature headers prove the sender.
 */
function webhookOperation (type: DeliveredType): Json {
  const body = eventSchema(type)
  const name = eventSchemaName(type)
  return {
    operationId: `${name.charAt(0).toLowerCase()}${name.slice(1)}`,
    summary: `The \`${type}\` event`,
    description: `${String(body.description)} Verify \`webhook-signature\` on the body as it came before acting on it.`,
    tags: [EVENTS_TAG.name],
    security: [],
    parameters: WEBHOOK_HEADERS.map(({ name: header }) => ({ $ref: `#/components/parameters/${header}` })),
    requestBody: { required: true, description: `The \`${type}\` event.`, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } },
    responses: {
      '2XX': { description: 'Received: any 2xx is success. Answer within 10 seconds, and do the work after; only the first 64 KiB of the answer is read.' },
      default: {
        description: 'Any other answer, or none within 10 seconds, is a failure. A 4xx other than 408 and 429 is final: the event is not sent again (`410 Gone` says stop). Anything else (a 3xx, as redirects are not followed; 408; 429, waiting at least its `Retry-After`; a 5xx; a timeout or a connection error) is retried, backing off exponentially with jitter, for about three days after the event.'
      }
    }
  }
}

/** A header or parameter as OpenAPI writes it: the description beside the schema, not in it (as @fastify/swagger writes a route's headers). */
function headerObject ({ description, ...schema }: TSchema): { description?: string, schema: Json } {
  return { ...(typeof description === 'string' ? { description } : {}), schema }
}

/**
 * Swagger refers to a schema with an `$id` when it is nested in another, but
 * writes a request body's or a response's own schema in full; those become
 * references here. A response keeps its description and headers.
 */
function referToRootSchemas (schema: FastifySchema): FastifySchema {
  // Swagger calls this for every route, with or without a schema.
  if ((schema as FastifySchema | undefined) === undefined) return schema
  const ref = (node: Json): Json => ({ $ref: `#/components/schemas/${String(node.$id)}` })
  const named = (node: unknown): node is Json => typeof node === 'object' && node !== null && typeof (node as Json).$id === 'string'
  const responses = schema.response as Record<string, unknown> | undefined
  return {
    ...schema,
    ...(named(schema.body) ? { body: ref(schema.body) } : {}),
    ...(responses === undefined
      ? {}
      : {
          response: Object.fromEntries(Object.entries(responses).map(([status, response]) =>
            [status, named(response) ? { ...ref(response), description: response.description, headers: response.headers } : response]))
        })
  }
}

/**
 * Writes the recurring response headers, the `X-Request-Id` parameter and
 * the responses several operations give alike once, under `components`, and
 * refers to them; only what is equal is replaced, so the document says
 * exactly what it said before. @fastify/swagger does so for schemas only.
 */
function referToComponents<T extends object> (openapiObject: T): T {
  const document = openapiObject as OpenApiDocument
  const headers = Object.entries(HEADERS).map(([key, { name, schema }]) => ({ key, name: name.toLowerCase(), value: headerObject(schema) }))
  const operations: Operation[] = []
  for (const item of Object.values(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (OPERATION_KEYS.has(method)) operations.push(operation as Operation)
    }
  }
  const used = new Set<string>()
  for (const operation of operations) {
    operation.parameters = [...(operation.parameters ?? []), { $ref: `#/components/parameters/${REQUEST_ID_PARAMETER.name}` }]
    for (const response of Object.values(operation.responses ?? {})) {
      const sent = response.headers as Record<string, Json> | undefined
      if (sent === undefined) continue
      for (const [name, header] of Object.entries(sent)) {
        const component = headers.find((h) => h.name === name.toLowerCase() && same(h.value, header))
        if (component === undefined) continue
        sent[name] = { $ref: `#/components/headers/${component.key}` }
        used.add(component.key)
      }
    }
  }
  const responses = shareResponses(operations)
  return {
    ...openapiObject,
    components: {
      ...document.components,
      // Only the headers some operation sends (`Allow` is for 405s, which no operation lists).
      headers: Object.fromEntries(headers.filter(({ key }) => used.has(key)).map(({ key, value }) => [key, value])),
      ...(Object.keys(responses).length > 0 ? { responses } : {})
    }
  }
}

/** Responses that more than one operation gives alike, named after their status (`TooManyRequests`); each use becomes a reference. */
function shareResponses (operations: Operation[]): Record<string, Json> {
  const shared: Record<string, Json> = {}
  const uses = operations.flatMap((operation) => Object.entries(operation.responses ?? {}).map(([status, response]) => ({ operation, status, response })))
  for (const use of uses) {
    if (!uses.some((other) => other.operation !== use.operation && other.status === use.status && same(other.response, use.response))) continue
    let name = Object.keys(shared).find((key) => same(shared[key], use.response))
    if (name === undefined) {
      const base = (STATUS_CODES[Number(use.status)] ?? `Status ${use.status}`).replace(/[^A-Za-z0-9]+/g, '')
      name = base
      for (let n = 2; name in shared; n++) name = `${base}${n}`
      shared[name] = use.response
    }
  }
  for (const use of uses) {
    // Shared responses are pairwise unequal, so at most one matches.
    const name = Object.keys(shared).find((key) => same(shared[key], use.response))
    if (name !== undefined && use.operation.responses !== undefined) use.operation.responses[use.status] = { $ref: `#/components/responses/${name}` }
  }
  return shared
}
