// buildApp(deps): the whole HTTP interface, from plugins and then routes.
// It owns no process concerns (ports, signals): tests build it and call
// `inject`; server.ts runs it.
//
// A /v1 request passes, in order: deprecation headers → the gate
// (plugins/access.ts: identify, count and limit (429), refuse (401)) →
// routing (404, 405) → body parser (415, 413, bad JSON) → schema validation
// (400) → handler → service → storage.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, Server } from 'node:http'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import cors from '@fastify/cors'
import type { Config } from './config.js'
import { Errors } from './errors.js'
import type { Storage } from './db/storage.js'
import type { RateLimitStore } from './limits/store.js'
import { CursorCodec } from './pets/cursor.js'
import { PetService } from './pets/service.js'
import { selfBaseUrl } from './base-url.js'
import { compileValidator, type HttpPart } from './schemas/validator.js'
import accessPlugin, { createGate } from './plugins/access.js'
import { createAuthenticator } from './plugins/auth.js'
import deprecationPlugin from './plugins/deprecation.js'
import errorsPlugin, { createClientErrorHandler, createRawAnswerer, sendError, toApiError } from './plugins/errors.js'
import framingPlugin, { isApiPath } from './plugins/framing.js'
import jsonBodyPlugin, { BODY_LIMIT } from './plugins/json-body.js'
import openapiPlugin from './plugins/openapi.js'
import { createAddressCounter, createRateLimiter, type LimitEvents } from './plugins/rate-limit.js'
import metricsPlugin from './plugins/metrics.js'
import { RequestLog, mayHoldToken } from './request-log.js'
import { createBanLog } from './limits/ban-log.js'
import type { Metrics } from './metrics.js'
import healthRoutes from './routes/health.js'
import methodNotAllowedRoutes, { routeEveryMethod } from './routes/method-not-allowed.js'
import petRoutes from './routes/pets.js'

export interface AppDeps {
  config: Config
  storage: Storage
  limiter: RateLimitStore
  /** Unix milliseconds; injected so that tests control windows, bans and the sunset. */
  now?: () => number
  /** A pino logger; none in tests. */
  logger?: FastifyBaseLogger
  /** Connection timeouts; tests shorten them. */
  timeouts?: Partial<Timeouts>
  /** Where requests, refusals and bans are counted; none in most tests. */
  metrics?: Metrics
}

/**
 * A slow client cannot hold a connection: its headers must arrive within
 * `headersMs` and its whole request within `requestMs` (checked every
 * `checkEveryMs`), and an idle keep-alive connection closes after
 * `keepAliveMs`, longer than common load balancers' 60 s so they close first.
 * On close, an idle connection gets `closeGraceMs` for a request already on
 * its way (graceIdleConnections).
 * https://nodejs.org/api/http.html#serverheaderstimeout
 */
interface Timeouts {
  headersMs: number
  requestMs: number
  keepAliveMs: number
  idleSocketMs: number
  checkEveryMs: number
  closeGraceMs: number
}

const DEFAULT_TIMEOUTS: Timeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 65_000,
  idleSocketMs: 120_000,
  checkEveryMs: 1_000,
  closeGraceMs: 1_000
}

/** The API's paths under /v1; their methods are the routes registered for them. */
const API_PATHS = ['/pets', '/pets/:petId']

/** Headers a browser script may read, when CORS is on. */
const EXPOSED_HEADERS = [
  'Link', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset',
  'RateLimit', 'RateLimit-Policy', 'Deprecation', 'Sunset', 'Idempotent-Replayed', 'X-Request-Id'
]

export async function buildApp ({ config, storage, limiter, now = Date.now, logger, timeouts: own = {}, metrics }: AppDeps): Promise<FastifyInstance> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...own }
  const identify = createAuthenticator({ storage, environment: config.environment, now })
  const banLog = logger === undefined ? undefined : createBanLog(logger, now)
  const events: LimitEvents = {
    refused: (code) => { metrics?.refused(code) },
    banned: (keyId, until) => { metrics?.banned(); banLog?.started(keyId, until) }
  }
  const limit = createRateLimiter({ store: limiter, ban: { threshold: config.banThreshold, seconds: config.banSeconds }, now, events })
  const gate = createGate({ identify, limit })
  const countAddress = createAddressCounter({ store: limiter, now })
  const answerRaw = createRawAnswerer(countAddress)
  const app = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger }),
    bodyLimit: BODY_LIMIT,
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    connectionTimeout: timeouts.idleSocketMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // A request without Host is answered by plugins/framing.ts, with an Error body.
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: timeouts.checkEveryMs, requireHostHeader: false },
    // Fastify's own 503 while closing has its own body shape; requests that
    // arrive while closing are answered normally instead.
    return503OnClosing: false,
    // The client's X-Request-Id when it is usable (DECISIONS §12), else one of ours.
    requestIdHeader: false,
    genReqId: requestId,
    logController: new RequestLog(),
    clientErrorHandler: createClientErrorHandler(answerRaw),
    // Ids are validated by their schema (a 400 that names the field); only a
    // path segment longer than this is refused by the router itself.
    routerOptions: { maxParamLength: 1000 },
    // A URL the router cannot decode (`%zz`) or a path segment too long to
    // route: under /v1 it passes the gate like any request, then gets 400.
    frameworkErrors: (_error, request, reply) => {
      reply.header('x-request-id', request.id)
      const answer = Errors.invalidUrl()
      const passed = isApiPath(request.url) ? gate(request, reply) : Promise.resolve()
      passed.then(() => sendError(reply, answer), (error: Error) => sendError(reply, toApiError(error) ?? answer))
    }
  })
  routeEveryMethod(app)
  app.setValidatorCompiler(({ schema, httpPart }) =>
    compileValidator(schema as Parameters<typeof compileValidator>[0], (httpPart ?? 'body') as HttpPart))

  // Hooks with nothing to wait for take a callback: an async hook costs
  // every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })

  // Once closing, each response ends its keep-alive connection, so that the
  // server can finish: it closes only the connections that are idle.
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
    graceIdleConnections(app.server, timeouts.closeGraceMs)
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })

  const baseUrl = selfBaseUrl(config, () => app.server.address())

  await app.register(errorsPlugin)
  await app.register(framingPlugin, { answerRaw, countAddress })
  if (metrics !== undefined) await app.register(metricsPlugin, { metrics })
  if (banLog !== undefined) app.addHook('onClose', async () => { banLog.close() })
  await app.register(jsonBodyPlugin)
  if (config.corsOrigins.length > 0) {
    await app.register(cors, { origin: [...config.corsOrigins], exposedHeaders: EXPOSED_HEADERS, maxAge: 600 })
  }
  await app.register(openapiPlugin, { config, baseUrl })
  await app.register(healthRoutes, { storage, limiter })

  const pets = new PetService(storage, new CursorCodec(await storage.secret('cursor')), now)
  await app.register(async function v1 (api) {
    await api.register(deprecationPlugin, { baseUrl, now })
    await api.register(accessPlugin, { gate })
    await api.register(petRoutes, { pets, baseUrl })
    await api.register(methodNotAllowedRoutes, { paths: API_PATHS })
    api.setNotFoundHandler(async (request) => { throw Errors.notFound(request.method, request.url) })
  }, { prefix: '/v1' })

  return app
}

/**
 * Node's server.close() destroys every connection idle at that instant,
 * including a keep-alive one whose next request is already in its socket,
 * unread: that client loses a request it sent in time, with no answer to
 * tell whether it was done. So idle connections get a grace instead: a
 * request that arrives meanwhile is answered, with Connection: close; those
 * still idle after it are closed.
 */
function graceIdleConnections (server: Server, ms: number): void {
  const closeIdle = server.closeIdleConnections.bind(server)
  server.closeIdleConnections = () => {}
  setTimeout(closeIdle, ms).unref()
}

/** A client's request id: 1 to 128 visible ASCII characters, so that it is safe in a header and a log line. */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/** The client's id when usable; one that may hold a token is not, since ids are logged (DECISIONS §2). */
function requestId (request: IncomingMessage): string {
  const theirs = request.headers['x-request-id']
  return typeof theirs === 'string' && CLIENT_REQUEST_ID.test(theirs) && !mayHoldToken(theirs) ? theirs : randomUUID()
}

/** TRUST_PROXY=N: believe the last N proxies of X-Forwarded-For. https://fastify.dev/docs/latest/Reference/Server/#trustproxy */
function trustHops (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}
