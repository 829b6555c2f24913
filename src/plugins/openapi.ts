// The OpenAPI 3.1 document, generated from the route schemas (the same ones
// that validate requests), and the interactive docs page built from it,
// with every asset served from here. Both answer without a key and are not
// rate limited.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { stringify } from 'lossless-json'
import { INT64_MAX } from '../schemas/kinds.js'
import type { Config } from '../config.js'

interface OpenApiOptions {
  config: Pick<Config, 'environment' | 'publicBaseUrl' | 'stagingBaseUrl'>
  /** This instance's own address: with PORT=0, known only once listening. */
  baseUrl: () => string
}

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

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Animal Adoption Store',
        version: '1.0.0',
        description: 'Browse and add animals available for adoption. Every operation needs an API key, sent as `Authorization: Bearer <API_KEY>`, and is rate limited per key: see the `X-RateLimit-*` headers, and wait for `Retry-After` after a 429.',
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' }
      },
      servers: servers(),
      tags: [{ name: 'pets', description: 'Animals available for adoption.' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key made by `petstore keys create`: `pet_live_…` in production, `pet_test_…` in staging.' }
        }
      },
      security: [{ bearerAuth: [] }]
    },
    // Paths are written relative to the servers, which end in /v1.
    stripBasePath: true
  })

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
    // LAN address), so scripts are not forced to https.
    // https://github.com/fastify/fastify-swagger/issues/690
    transformStaticCSP: (header) => header.replace(/ ?upgrade-insecure-requests;?/, ''),
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0, layout: 'BaseLayout' },
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
function exactBounds (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(exactBounds)
  if (typeof node !== 'object' || node === null) return node
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) copy[key] = exactBounds(value)
  if (copy.format === 'int64' && typeof copy.maximum === 'number' && copy.maximum >= 2 ** 63) copy.maximum = INT64_MAX
  return copy
}
