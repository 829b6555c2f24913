// buildApp(deps): the whole HTTP interface, from plugins and then routes;
// no process concerns (ports, signals): tests build it and call `inject`,
// run/service.ts builds it for the process and for each worker thread.
// Where a request goes: docs/INTERNALS.md, section "App".
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify'
import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { Config } from '../config.js'
import { Errors } from '../errors.js'
import type { Storage } from '../db/storage.js'
import type { RateLimitStore } from '../limits/store.js'
import { CursorCodec } from '../pets/cursor.js'
import { PetService } from '../pets/service.js'
import { selfBaseUrl } from './base-url.js'
import { routerAnswerHeaders, setUpAnswers } from './answers.js'
import { createQuotaAnnouncer } from '../keys/announcements.js'
import { createIdentify } from '../keys/identify.js'
import { createKeyLookup } from '../keys/lookup.js'
import { createUsageCounter } from '../keys/usage.js'
import { createAddressCounter, createLimit, type LimitEvents } from '../limits/limit.js'
import { DEFAULT_CONNECTION_CAPS, type ConnectionCaps } from './connections.js'
import { DEFAULT_TIMEOUTS, createEdge, type Timeouts } from './edge.js'
import framingPlugin, { framingRefusal } from '../plugins/framing.js'
import { FairPool } from '../limits/fair-pool.js'
import { TurnShare } from '../limits/turn-share.js'
import gatePlugin, { createGate, isApiPath } from '../plugins/gate.js'
import deprecationPlugin from '../plugins/deprecation.js'
import errorsPlugin, { sendError, toApiError } from '../plugins/errors.js'
import jsonBodyPlugin, { BODY_LIMIT } from '../plugins/json-body.js'
import openapiPlugin from '../plugins/openapi.js'
import metricsPlugin from '../plugins/metrics.js'
import shedPlugin, { createShed, type Shed } from '../plugins/shed.js'
import { watchOwnLoad, type Overload } from '../telemetry/load.js'
import { RequestLog, requestIdMaker } from '../telemetry/request-log.js'
import { createBanLog } from '../limits/ban-log.js'
import { InFlight, createInFlightTable, type InFlightTable } from '../limits/in-flight.js'
import type { Metrics } from '../telemetry/metrics.js'
import healthRoutes from '../routes/health.js'
import methodNotAllowedRoutes, { collectPaths } from '../routes/method-not-allowed.js'
import petRoutes from '../routes/pets.js'
import rateLimitRoutes from '../routes/rate-limit.js'
import leakRoutes from '../routes/leaks.js'
import { createScannerKeys, type ScannerKeys } from '../keys/scanner-keys.js'

export interface AppDeps {
  config: Config
  storage: Storage
  limiter: RateLimitStore
  /** Unix milliseconds; injected so that tests control windows, bans and the sunset. */
  now?: () => number
  /** Monotonic milliseconds (never 0), for the key cache; injected so that tests control it. */
  monotonic?: () => number
  /** A pino logger; none in tests. */
  logger?: FastifyBaseLogger
  /** Connection timeouts (edge.ts); tests shorten them. */
  timeouts?: Partial<Timeouts>
  /** Where requests, refusals and bans are counted; none in most tests. */
  metrics?: Metrics
  /** Connection caps (edge.ts); tests lower them. */
  connectionCaps?: Partial<ConnectionCaps>
  /** The table of requests in flight per key, shared by the workers (limits/in-flight.ts), and this thread's column in it; default: one of its own. */
  inFlight?: { table: InFlightTable, column: number }
  /**
   * What the shedder reads (plugins/shed.ts) unless SHED=off; tests give
   * their own. Default: this thread's event loop and the storage's pool,
   * read every half second (telemetry/load.ts).
   */
  overload?: Overload
  /** The keys that verify secret-scanning reports; default: read from SECRET_SCANNING_KEYS_URL. */
  scannerKeys?: ScannerKeys
}

/** Headers a browser script may read, when CORS is on. */
const EXPOSED_HEADERS = [
  'Link', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset',
  'RateLimit', 'RateLimit-Policy', 'Deprecation', 'Sunset', 'Idempotent-Replayed', 'X-Request-Id'
]

export async function buildApp ({
  config, storage, limiter, now = Date.now, monotonic = () => performance.now(), logger, timeouts: own = {}, metrics, connectionCaps = {},
  inFlight: shared = { table: createInFlightTable({ columns: 1 }), column: 0 }, overload: given, scannerKeys
}: AppDeps): Promise<FastifyInstance> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...own }
  let lastRefreshWarning = -Infinity
  const keys = createKeyLookup({
    storage,
    environment: config.environment,
    clock: monotonic,
    onRefreshError: (error) => {
      // Refreshes run every 500 ms: a database away for an hour is said once a minute, not 7,200 times.
      if (monotonic() - lastRefreshWarning < 60_000) return
      lastRefreshWarning = monotonic()
      logger?.warn({ err: error }, 'key index: refresh failed; it keeps the keys it has and tries again')
    }
  })
  // Resolves once the index is loaded, or its load failed: until then every token is looked up.
  await keys.start()
  const identify = createIdentify({ environment: config.environment, keys, now })
  const banLog = logger === undefined ? undefined : createBanLog(logger, now)
  const events: LimitEvents = {
    refused: (code) => { metrics?.refused(code) },
    banned: (keyId, until) => { metrics?.banned(); banLog?.started(keyId, until) },
    // Written after the answer's decision, never awaited: a failure is logged, and the next request at the level tries again.
    quotaReached: createQuotaAnnouncer(storage, (error) => { logger?.warn({ err: error }, 'webhooks: a quota event was not written; the next request at that level tries again') })
  }
  const limit = createLimit({ store: limiter, ban: { threshold: config.banThreshold, seconds: config.banSeconds }, now, events })
  const usage = createUsageCounter({
    storage,
    now,
    flushMs: config.usageFlushMs,
    onError: (error) => { logger?.warn({ err: error }, 'usage: write failed; the counts are kept for the next write') },
    onDropped: (count) => { logger?.warn({ count }, 'usage: counts dropped while the database was away') },
    onCounted: (plan, outcome) => { metrics?.keyRequest(plan, outcome) }
  })
  usage.start()
  let warnedFull = false
  const inFlight = new InFlight(shared.table, shared.column, () => {
    if (warnedFull) return
    warnedFull = true
    logger?.warn('requests in flight: the table of keys is full; keys not in it are not capped until a restart (docs/INTERNALS.md: Requests in flight)')
  }, limiter.slots)
  const { mode: shedMode, ...thresholds } = config.shed
  const watch = shedMode === 'off' || given !== undefined
    ? undefined
    : watchOwnLoad({ poolUse: () => storage.poolUse(), thresholds, onReading: (reading) => { metrics?.eventLoopDelay(reading.eventLoopDelayMs) } })
  const overload = given ?? watch
  const shed: Shed | undefined = shedMode === 'off' || overload === undefined
    ? undefined
    : createShed({ mode: shedMode, overload, thresholds, now, monotonic, logger, metrics })
  const places = storage.poolUse()?.max
  const pool = places === undefined ? undefined : new FairPool(places)
  const gate = createGate({ identify, limit, usage, inFlight, turns: new TurnShare(), shed, pool })
  // Behind trusted proxies every connection is a proxy's: no cap per address.
  const secrets = config.adminToken === undefined ? [] : [config.adminToken]
  const caps = { ...DEFAULT_CONNECTION_CAPS, ...(config.trustProxy === false ? {} : { perAddress: undefined }), ...connectionCaps }
  const edge = createEdge({ countAddress: createAddressCounter({ store: limiter, now }), timeouts, caps })
  const app = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger }),
    // The server and its timeouts are the edge's.
    serverFactory: edge.serverFactory,
    clientErrorHandler: edge.clientError,
    // Idle connections are the edge's to close, after a grace.
    forceCloseConnections: false,
    bodyLimit: BODY_LIMIT,
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // Fastify's own 503 while closing has its own body shape; requests that
    // arrive while closing are answered normally instead.
    return503OnClosing: false,
    // The client's X-Request-Id when it is usable, else one of ours.
    requestIdHeader: false,
    // The admin token too, should it be sent here (docs/KEYS.md: The admin API).
    genReqId: requestIdMaker(secrets),
    logController: new RequestLog(secrets),
    // Ids are validated by their schema (a 400 that names the field); only a
    // path segment longer than this is refused by the router itself.
    routerOptions: { maxParamLength: 1000 },
    // A URL the router cannot decode (`%zz`) or a path segment too long to
    // route: under /v1 it is checked as any request is, then gets 400.
    // Fastify runs no hook for a request its router cannot take, so the
    // gate's onRequest and the framing check are called here by hand;
    // elsewhere the URL is all that is answered.
    frameworkErrors: (_error, request, reply) => {
      routerAnswerHeaders(request, reply)
      const answer = Errors.invalidUrl()
      const api = isApiPath(request.url)
      const shedding = api ? shed?.anyone(reply) : undefined
      if (shedding !== undefined) {
        sendError(reply, shedding)
        return
      }
      const checked = api ? gate(request, reply).then(() => framingRefusal(request.raw)) : Promise.resolve(undefined)
      checked.then((refusal) => sendError(reply, refusal ?? answer), (error: Error) => sendError(reply, toApiError(error) ?? answer))
    }
  })

  // Once closing, each response ends its keep-alive connection, so that the
  // server can finish; which headers every answer carries, and why: answers.ts.
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  setUpAnswers(app, () => closing)

  const baseUrl = selfBaseUrl(config, () => app.server.address())

  await app.register(errorsPlugin)
  await app.register(framingPlugin)
  if (metrics !== undefined) await app.register(metricsPlugin, { metrics })
  if (banLog !== undefined) app.addHook('onClose', async () => { banLog.close() })
  app.addHook('onClose', async () => { keys.close() })
  if (watch !== undefined) {
    // Loading and compiling held the event loop; serving starts from here.
    app.addHook('onReady', async () => { watch.forget() })
    app.addHook('onClose', async () => { watch.close() })
  }
  // After the requests in flight, before the storage closes (server.ts): what was counted is written.
  app.addHook('onClose', async () => { await usage.close() })
  await app.register(jsonBodyPlugin)
  if (config.corsOrigins.length > 0) {
    // Only a real preflight is @fastify/cors's to answer; any other OPTIONS
    // gets the CORS headers and goes on, through the gate, to its 401, 405
    // or 404 like any other method (its strict mode would answer it 400,
    // in text, before the gate).
    const preflight: FastifyCorsOptions = { origin: [...config.corsOrigins], exposedHeaders: EXPOSED_HEADERS, maxAge: 600 }
    const other: FastifyCorsOptions = { ...preflight, preflight: false }
    await app.register(cors, {
      delegator: (request, done) => { done(null, isPreflight(request) ? preflight : other) }
    })
  }
  await app.register(openapiPlugin, { config, baseUrl })
  await app.register(healthRoutes, { storage, limiter })

  const pets = new PetService(storage, new CursorCodec(await storage.secret('cursor')), now)
  await app.register(async function v1 (api) {
    await api.register(deprecationPlugin, {
      baseUrl, now, brownouts: config.deprecationBrownouts, onCalled: (keyId, operationId) => { usage.countDeprecated(keyId, operationId) }
    })
    // After the deprecation's headers, which every answer of its operation carries; before the gate, whose lookup and count a shed request must not cost.
    if (shed !== undefined) await api.register(shedPlugin, { shed })
    await api.register(gatePlugin, { gate })
    const paths = collectPaths(api)
    await api.register(petRoutes, { pets, baseUrl })
    await api.register(rateLimitRoutes)
    await api.register(methodNotAllowedRoutes, { paths })
    api.setNotFoundHandler(async (request) => { throw Errors.notFound(request.method, request.url) })
  }, { prefix: '/v1' })

  // Beside the /v1 scope, not in it: a secret scanner and a token's holder have no key for its gate.
  // After it, so that the OpenAPI document lists the API's own operations first, and they name the responses they share.
  await app.register(leakRoutes, {
    prefix: '/v1',
    storage,
    limiter,
    now,
    logger,
    scannerKeys: scannerKeys ?? createScannerKeys({
      url: config.secretScanningKeysUrl,
      monotonic,
      onError: (error) => { logger?.warn({ err: error }, 'secret scanning: the key list could not be read; the keys already read are kept') }
    })
  })

  return app
}

/** A CORS preflight: an OPTIONS that names its origin and the method it asks for. https://fetch.spec.whatwg.org/#cors-preflight-fetch */
function isPreflight (request: FastifyRequest): boolean {
  return request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined
}

/** TRUST_PROXY=N: believe the last N proxies of X-Forwarded-For. https://fastify.dev/docs/latest/Reference/Server/#trustproxy */
function trustHops (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}
