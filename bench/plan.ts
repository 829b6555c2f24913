// What is measured, server by server, and the target each row is held to
// (the performance requirement: CPU time per request as a ratio of a peer's
// in the same run, p99 and RSS). Each server is seeded and started only when one of its
// rows is selected, and stopped before the next one starts. With --workers,
// the petstore's main operations run once per worker count, each count on a
// server of its own started with WORKERS=N.
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateToken } from '../src/keys/tokens.js'
import { CLI, START_FLAGS, runCliOk } from '../test/support/process.js'
import type { LoadRequest } from './load.js'
import { clearOfMinuteEnd, deepCursor, enterpriseKey, holdSlot, spend } from './prepare.js'
import { Targets, type Target, type Workers } from './report.js'
import { seedPostgres, seedSqlite } from './seed.js'
import type { ServerSpec } from './servers.js'
import type { WebhookReceiver } from './webhook-receiver.js'
import { LAG_RATE, webhookRows, type MeasureContext, type Measured } from './webhooks.js'

export const ANIMALS = 100_000
export const FEW_ANIMALS = 1_000
export const MANY_ANIMALS = 1_000_000
/** Far above anything a run can send: the limiter counts, but never refuses. */
const NEVER_REFUSED = '1000000000'
/** The highest RATE_LIMIT_BAN_THRESHOLD the service accepts: refusals a minute no run reaches. */
const NO_BAN = '1000000'
/** The cursor scenario starts this far into the table. */
const CURSOR_DEPTH = 0.9
const RSS_MIB = 150
const P99_MS = 5
/** With WORKERS=2, the list's requests per second at least this many times one worker's. */
const TWO_WORKERS_SPEEDUP = 1.3
/**
 * The durable create with WORKERS=2: at least one worker's requests a
 * second, no loss (one SQLite writer and the load generator share this
 * machine's two cores, so a gain would measure the machine), and its CPU a
 * request within 25 % of one worker's.
 */
const TWO_WORKERS_CREATE = { speedup: 1, cpuShare: 0.25 }
/** At these worker counts, CPU time per request (the whole process's) within this share of one worker's, either way, unless a row says otherwise. */
const CPU_SHARE = 0.15
const CPU_SHARE_AT = [2, 4]
/**
 * What the petstore serves set against the peers, in requests per
 * CPU-second (docs/PERFORMANCE.md: "Third round: the peers, re-set"): the
 * durable create against the group-commit peer without a log and with
 * Fastify's request log; getPet and the deep list against their peers the
 * same two ways.
 */
const SERVES = { create: 0.85, createLogged: 1.2, read: 0.7, readLogged: 1 }
/** A create with one subscribed endpoint, its delivery counted: CPU at most this many times the create row's (same run). */
const WEBHOOK_CREATE_CPU = 1.15
const DELIVERIES_PER_SECOND = 1000
/** From a create's 201 to its event at the receiver, at a steady moderate rate. */
const DELIVERY_LAG_P99_MS = 1000

/**
 * The concurrency row's connections: each refusal waits 250 ms for a slot
 * (CONCURRENCY_WAIT_MS), so 32 would send some 130 a second, and the
 * service's own periodic work would be most of each one's CPU.
 */
const CONCURRENCY_CONNECTIONS = 512

const HERE = dirname(fileURLToPath(import.meta.url))
const PETSTORE = [...START_FLAGS, CLI, 'serve']
const NEW_PET = JSON.stringify({ name: 'Bench', categoryId: 1, status: 'available' })

/** The four operations every petstore backend is measured on. */
type Operation = 'list' | 'deep' | 'create' | 'get'

interface Scenario {
  id: string
  scenario: string
  /** The bare server's row this one is a ratio of. */
  bare: 'bare-get' | 'bare-post'
  /** The row whose CPU per request the report sets this one's against. */
  peer?: Peer
  targets: Target[]
  /** The load's request against the running server, and the error code each answer must carry. */
  request: (origin: string) => Promise<{ request: LoadRequest, code?: string, release?: () => void }>
  /** Connections of its own, for a row whose answers wait by design: enough that the service, not the wait, sets the pace. */
  connections?: number
  /**
   * Measured once per worker count with --workers; `speedup`: at two workers
   * also held to this many times one worker's requests a second;
   * `cpuShare`: CPU a request within this share of one worker's (CPU_SHARE
   * unless given).
   */
  scaled?: { speedup?: number, cpuShare?: number }
  /** Set on a scaled row once given its worker count. */
  workers?: Workers
  /** A row measured its own way rather than by one load run (the webhook rows): its warm-up included. */
  measure?: (context: MeasureContext) => Promise<Measured>
}

interface Peer { id: string, name: string }

const LIST_PEER: Peer = { id: 'list-peer', name: 'list peer' }
const GET_PEER: Peer = { id: 'get-peer', name: 'getPet peer' }
const CREATE_PEER: Peer = { id: 'create-peer', name: 'group-commit peer' }
const FASTIFY_MINIMAL: Peer = { id: 'fastify-minimal', name: 'Fastify minimal' }
/** The same peers with Fastify's request log on at `info`: the servers a user would pick instead. */
const LIST_PEER_LOGGED: Peer = { id: 'list-peer-logged', name: 'list peer, logging' }
const GET_PEER_LOGGED: Peer = { id: 'get-peer-logged', name: 'getPet peer, logging' }
const CREATE_PEER_LOGGED: Peer = { id: 'create-peer-logged', name: 'group-commit peer, logging' }

export interface Group {
  section: string
  server: string
  /** The petstore's WORKERS; undefined: not set (one worker, the default). */
  workers?: number
  /** Seeds what the server needs; how to start it. */
  prepare: () => Promise<ServerSpec>
  scenarios: Scenario[]
}

export interface PlanContext {
  dir: string
  signal: AbortSignal
  /** Starts PostgreSQL and Redis on first use; the caller stops them. */
  scaleOut: () => Promise<{ databaseUrl: string, redisUrl: string }>
  /** Starts, on first use, an OTLP/HTTP receiver that counts the spans and discards them; gives its endpoint. The caller stops it. */
  traceSink: () => Promise<string>
  /** Starts, on first use, the receiver the webhook rows deliver to (bench/webhook-receiver.ts). The caller stops it. */
  webhookReceiver: () => Promise<WebhookReceiver>
  /** The worker counts to measure the scaled rows at (1 among them, the rows the others are compared with); undefined: those rows run once, WORKERS unset. */
  workers: readonly number[] | undefined
  /** How long a row's load lasts, warm-up included. */
  rowSeconds: number
}

export const SQLITE = 'The reference servers, and the petstore on SQLite'
export const SCALE_OUT = 'PostgreSQL + Redis'

export function plan ({ dir, signal, scaleOut, traceSink, webhookReceiver, workers, rowSeconds }: PlanContext): Group[] {
  const sqlite = (animals: number, name = `pets-${animals}`): { url: string, file: string, key: () => Promise<string> } => {
    const file = join(dir, `${name}.db`)
    const url = `sqlite:${file}`
    return { file, url, key: once(async () => { await seedSqlite(file, animals); return await enterpriseKey(url, 'bench', NEVER_REFUSED, NEVER_REFUSED) }) }
  }
  const main = sqlite(ANIMALS)
  const few = sqlite(FEW_ANIMALS)
  const many = sqlite(MANY_ANIMALS)
  // A database of its own: an endpoint in the main one would deliver the other rows' creates too.
  const hooked = sqlite(ANIMALS, `pets-${ANIMALS}-webhooks`)
  const endpoint = once(async () => {
    await hooked.key()
    await runCliOk(['webhooks', 'create', '--url', (await webhookReceiver()).url, '--events', 'pet.created', '--description', 'bench receiver'],
      { DATABASE_URL: hooked.url, WEBHOOK_ALLOW_PRIVATE: 'true' })
  })
  const hooks = webhookRows(webhookReceiver, ANIMALS)
  // With --workers, the create row is measured at each count: the one-worker one is the webhook row's.
  const CREATE_ROW: Peer = { id: atWorkers('create', workers === undefined ? undefined : 1), name: 'create row' }
  const postgres = once(async () => {
    const { databaseUrl, redisUrl } = await scaleOut()
    await seedPostgres(databaseUrl, ANIMALS)
    return { databaseUrl, redisUrl, token: await enterpriseKey(databaseUrl, 'bench', NEVER_REFUSED, NEVER_REFUSED) }
  })

  const get = (origin: string, path: string, token: string | undefined, expect = 200): LoadRequest =>
    ({ url: origin + path, method: 'GET', headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, expect })
  const post = (origin: string, token: string | undefined): LoadRequest =>
    ({ url: `${origin}/v1/pets`, method: 'POST', headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json' }, body: NEW_PET, expect: 201 })
  const rss = Targets.rss(RSS_MIB)

  /** The four operations of a petstore seeded with ANIMALS animals. */
  const operations = (prefix: string, token: () => Promise<string>, targets: Record<Operation, Target[]>, peers: Record<Operation, Peer>): Scenario[] => [
    { id: `${prefix}list`, scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', peer: peers.list, targets: targets.list, scaled: { speedup: TWO_WORKERS_SPEEDUP }, request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', await token()) }) },
    {
      id: `${prefix}deep`,
      scenario: `GET /v1/pets?status=sold&limit=20 from a cursor ${CURSOR_DEPTH * 100} % deep`,
      bare: 'bare-get',
      peer: peers.deep,
      targets: targets.deep,
      request: async (origin) => {
        const cursor = await deepCursor(origin, await token(), 'sold', BigInt(ANIMALS * CURSOR_DEPTH), signal)
        return { request: get(origin, `/v1/pets?status=sold&limit=20&cursor=${encodeURIComponent(cursor)}`, await token()) }
      }
    },
    { id: `${prefix}create`, scenario: 'POST /v1/pets (durable)', bare: 'bare-post', peer: peers.create, targets: targets.create, scaled: TWO_WORKERS_CREATE, request: async (origin) => ({ request: post(origin, await token()) }) },
    { id: `${prefix}get`, scenario: 'GET /v1/pets/{id}', bare: 'bare-get', peer: peers.get, targets: targets.get, scaled: {}, request: async (origin) => ({ request: get(origin, `/v1/pets/${ANIMALS / 2}`, await token()) }) }
  ]
  const p99 = Targets.p99(P99_MS)
  const sqlitePeers: Record<Operation, Peer> = { list: LIST_PEER, deep: LIST_PEER, create: CREATE_PEER, get: GET_PEER }
  const serves = (times: number, peer: Peer): Target => Targets.servesAtLeast(times, peer.id, peer.name)
  const sqliteTargets: Record<Operation, Target[]> = {
    list: [Targets.cpuTimes(0.8, LIST_PEER.id, LIST_PEER.name), p99, rss],
    deep: [serves(SERVES.read, LIST_PEER), serves(SERVES.readLogged, LIST_PEER_LOGGED), p99, rss],
    create: [serves(SERVES.create, CREATE_PEER), serves(SERVES.createLogged, CREATE_PEER_LOGGED), p99, rss],
    get: [serves(SERVES.read, GET_PEER), serves(SERVES.readLogged, GET_PEER_LOGGED), p99, rss]
  }
  // Scaled out, each operation is set against the same operation on SQLite
  // (with as many workers): every request also carries a loopback round
  // trip to PostgreSQL and to Redis (docs/PERFORMANCE.md).
  const scaleOutPeers = (n: number | undefined): Record<Operation, Peer> => ({
    list: { id: atWorkers('list', n), name: 'SQLite row' },
    deep: { id: 'deep', name: 'SQLite row' },
    create: { id: atWorkers('create', n), name: 'SQLite row' },
    get: { id: atWorkers('get', n), name: 'SQLite row' }
  })
  const scaleOutTargets = (n: number | undefined): Record<Operation, Target[]> => ({
    list: [Targets.cpuTimes(2, atWorkers('list', n), 'the SQLite row'), p99, rss],
    deep: [p99, rss],
    create: [Targets.cpuTimes(2, atWorkers('create', n), 'the SQLite row'), p99, rss],
    get: [p99, rss]
  })
  // A refusal costs a small fraction of a served request (docs/OPERATING.md: Overload): at most a third of a served list's CPU.
  const refusalCpu = [Targets.cpuTimes(1.5, FASTIFY_MINIMAL.id, FASTIFY_MINIMAL.name), Targets.cpuTimes(1 / 3, atWorkers('list', undefined), 'the SQLite list row')]
  const refused = [...refusalCpu, p99, rss]
  /** A 429 row: a key of one request a minute and `perDay` a day, spent until it gets `code`. */
  const spentKey = (id: string, scenario: string, perDay: string, code: 'rate_limited' | 'api_key_banned'): Scenario => ({
    id,
    scenario,
    bare: 'bare-get',
    peer: FASTIFY_MINIMAL,
    targets: refused,
    scaled: {},
    request: async (origin) => {
      const request = get(origin, '/v1/pets?limit=20', await enterpriseKey(main.url, `bench-${id}`, '1', perDay), 429)
      await spend(request, code, signal)
      return { request, code }
    }
  })
  const petstore = (url: string, env: Record<string, string> = {}, n?: number): ServerSpec =>
    ({ name: 'petstore', args: PETSTORE, env: { DATABASE_URL: url, ...env, ...(n === undefined ? {} : { WORKERS: String(n) }) } })
  /**
   * The group `make` builds, as it is without --workers; with it, its scaled
   * rows move to a server of their own for each worker count.
   */
  const perWorkers = (make: (n: number | undefined) => Group): Group[] => {
    const plain = make(undefined)
    if (workers === undefined) return [plain]
    return [
      { ...plain, scenarios: plain.scenarios.filter((s) => s.scaled === undefined) },
      ...workers.map((n) => {
        const group = make(n)
        return { ...group, server: `${group.server}, WORKERS=${n}`, workers: n, scenarios: group.scenarios.flatMap((s) => s.scaled === undefined ? [] : [scale(s, n)]) }
      })
    ]
  }
  /**
   * Tracing on, with OpenTelemetry's defaults (a batch every 5 s), to a sink
   * on this machine. These rows have no target of their own: tracing is
   * asked for, and what it costs is the gap to the same row without it.
   */
  const traced = async (): Promise<Record<string, string>> => ({ OTEL_EXPORTER_OTLP_ENDPOINT: await traceSink() })
  /** The list, getPet and group-commit peers again, Fastify's request log on at `info`. */
  const loggingPeers = (): Group[] => [
    { peer: LIST_PEER_LOGGED, file: 'list-peer', database: main.file, scenario: 'GET /v1/pets?limit=20', bare: 'bare-get' as const, request: async (origin: string) => get(origin, '/v1/pets?limit=20', await main.key()) },
    { peer: GET_PEER_LOGGED, file: 'get-peer', database: main.file, scenario: 'GET /v1/pets/{id}', bare: 'bare-get' as const, request: async (origin: string) => get(origin, `/v1/pets/${ANIMALS / 2}`, await main.key()) },
    { peer: CREATE_PEER_LOGGED, file: 'create-peer', database: join(dir, 'create-peer-logged.db'), scenario: 'POST /v1/pets (durable)', bare: 'bare-post' as const, request: async (origin: string) => post(origin, await main.key()) }
  ].map(({ peer, file, database, scenario, bare, request }) => ({
    section: SQLITE,
    server: `${peer.name} (Fastify's request log at info)`,
    prepare: async () => ({ name: peer.id, args: [join(HERE, 'peers', `${file}.js`)], env: { PEER_DATABASE: database, PEER_TOKEN: await main.key(), PEER_LOG: 'info' } }),
    scenarios: [{ id: peer.id, scenario, bare, targets: [], request: async (origin) => ({ request: await request(origin) }) }]
  }))
  const tracedList = (id: string, token: () => Promise<string>, targets: Target[]): Scenario =>
    ({ id, scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', targets, request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', await token()) }) })

  return [
    {
      section: SQLITE,
      server: 'bare node:http',
      prepare: async () => ({ name: 'bare', args: [join(HERE, 'bare-server.js')], env: {} }),
      scenarios: [
        { id: 'bare-get', scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', targets: [], request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', undefined) }) },
        { id: 'bare-post', scenario: 'POST /v1/pets', bare: 'bare-post', targets: [], request: async (origin) => ({ request: post(origin, undefined) }) }
      ]
    },
    {
      section: SQLITE,
      server: 'Fastify minimal (constant 20 pets)',
      prepare: async () => ({ name: 'fastify-minimal', args: [join(HERE, 'peers', 'fastify-minimal.js')], env: {} }),
      scenarios: [{ id: 'fastify-minimal', scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', targets: [], request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', undefined) }) }]
    },
    {
      section: SQLITE,
      server: `list peer (${count(ANIMALS)} animals)`,
      prepare: async () => ({ name: 'list-peer', args: [join(HERE, 'peers', 'list-peer.js')], env: { PEER_DATABASE: main.file, PEER_TOKEN: await main.key() } }),
      scenarios: [{ id: 'list-peer', scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', targets: [], request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', await main.key()) }) }]
    },
    {
      section: SQLITE,
      server: `getPet peer (${count(ANIMALS)} animals)`,
      prepare: async () => ({ name: 'get-peer', args: [join(HERE, 'peers', 'get-peer.js')], env: { PEER_DATABASE: main.file, PEER_TOKEN: await main.key() } }),
      scenarios: [{ id: 'get-peer', scenario: 'GET /v1/pets/{id}', bare: 'bare-get', targets: [], request: async (origin) => ({ request: get(origin, `/v1/pets/${ANIMALS / 2}`, await main.key()) }) }]
    },
    {
      section: SQLITE,
      server: 'group-commit peer',
      prepare: async () => ({ name: 'create-peer', args: [join(HERE, 'peers', 'create-peer.js')], env: { PEER_DATABASE: join(dir, 'create-peer.db'), PEER_TOKEN: await main.key() } }),
      scenarios: [{ id: 'create-peer', scenario: 'POST /v1/pets (durable)', bare: 'bare-post', targets: [], request: async (origin) => ({ request: post(origin, await main.key()) }) }]
    },
    ...loggingPeers(),
    ...perWorkers((n) => ({
      section: SQLITE,
      server: `petstore SQLite (${count(ANIMALS)} animals)`,
      prepare: async () => { await main.key(); return petstore(main.url, {}, n) },
      scenarios: [
        ...operations('', main.key, sqliteTargets, sqlitePeers),
        spentKey('429-banned', '429 api_key_banned (default config, key banned first)', '1000', 'api_key_banned')
      ]
    })),
    {
      section: SQLITE,
      server: `petstore SQLite (${count(ANIMALS)} animals), one webhook endpoint (pet.created, receiver on 127.0.0.1)`,
      prepare: async () => { await endpoint(); return petstore(hooked.url, { WEBHOOK_ALLOW_PRIVATE: 'true' }) },
      scenarios: [
        {
          id: 'webhook-create',
          scenario: 'POST /v1/pets, durable, CPU until its events are delivered',
          bare: 'bare-post',
          peer: CREATE_ROW,
          targets: [Targets.cpuTimes(WEBHOOK_CREATE_CPU, CREATE_ROW.id, 'the create row'), rss],
          request: async (origin) => ({ request: post(origin, await hooked.key()) }),
          measure: hooks.create
        },
        {
          id: 'webhook-throughput',
          scenario: 'webhook deliveries/s, a backlog let go at once (req/s: deliveries/s; CPU: per delivery)',
          bare: 'bare-post',
          targets: [Targets.perSecondAtLeast(DELIVERIES_PER_SECOND, 'deliveries')],
          request: async (origin) => ({ request: post(origin, await hooked.key()) }),
          measure: hooks.throughput
        },
        {
          id: 'webhook-lag',
          scenario: `POST /v1/pets at ${LAG_RATE}/s: 201 → delivery lag (p50, p99)`,
          bare: 'bare-post',
          targets: [Targets.p99(DELIVERY_LAG_P99_MS, 'lag p99')],
          request: async (origin) => ({ request: post(origin, await hooked.key()) }),
          measure: hooks.lag
        }
      ]
    },
    {
      section: SQLITE,
      server: `petstore SQLite (${count(ANIMALS)} animals), traced`,
      prepare: async () => { await main.key(); return petstore(main.url, await traced()) },
      scenarios: [tracedList('traced-list', main.key, [])]
    },
    {
      section: SQLITE,
      server: 'petstore SQLite, TRUST_PROXY=127.0.0.1',
      prepare: async () => { await main.key(); return petstore(main.url, { TRUST_PROXY: '127.0.0.1' }) },
      scenarios: [
        {
          id: '401-unknown',
          scenario: '401 unknown pet_live_ token, a new X-Forwarded-For each',
          bare: 'bare-get',
          peer: FASTIFY_MINIMAL,
          targets: refused,
          request: async (origin) => ({ request: { ...get(origin, '/v1/pets?limit=20', generateToken('production'), 401), forwardedFor: true }, code: 'invalid_api_key' })
        },
        {
          id: '401-garbage',
          scenario: '401 garbage bearer token, a new X-Forwarded-For each',
          bare: 'bare-get',
          peer: FASTIFY_MINIMAL,
          targets: refused,
          request: async (origin) => ({ request: { ...get(origin, '/v1/pets?limit=20', 'not-a-key', 401), forwardedFor: true }, code: 'invalid_api_key' })
        }
      ]
    },
    {
      section: SQLITE,
      server: 'petstore SQLite, a key of 1 request in flight, held',
      prepare: async () => { await main.key(); return petstore(main.url) },
      scenarios: [{
        id: '429-concurrency',
        scenario: `429 concurrency_limited (the key's one slot held, ${CONCURRENCY_CONNECTIONS} connections)`,
        bare: 'bare-get',
        peer: FASTIFY_MINIMAL,
        // Each refusal waits CONCURRENCY_WAIT_MS for a slot first, by design: no latency target.
        targets: [...refusalCpu, rss],
        connections: CONCURRENCY_CONNECTIONS,
        request: async (origin) => {
          const token = await enterpriseKey(main.url, 'bench-concurrency', NEVER_REFUSED, NEVER_REFUSED, ['--concurrency', '1'])
          const { release } = await holdSlot(origin, token)
          return { request: get(origin, '/v1/pets?limit=20', token, 429), code: 'concurrency_limited', release }
        }
      }]
    },
    {
      section: SQLITE,
      server: 'petstore SQLite, one address past its keyless limit',
      prepare: async () => { await main.key(); return petstore(main.url) },
      scenarios: [{
        id: '429-address',
        scenario: '429 rate_limited, a token no key has, from an address past its keyless limit',
        bare: 'bare-get',
        peer: FASTIFY_MINIMAL,
        targets: refused,
        // Each refusal waits for a read of new keys begun after it (docs/INTERNALS.md: Key lookup), up to 20 ms: enough connections that the wait is not what the row measures.
        connections: CONCURRENCY_CONNECTIONS,
        request: async (origin) => {
          // Every request of the load comes from 127.0.0.1: once it is spent, the token is refused without a lookup.
          const request = get(origin, '/v1/pets?limit=20', generateToken('production'), 429)
          await clearOfMinuteEnd(rowSeconds + 3)
          await spend(request, 'rate_limited', signal)
          return { request, code: 'rate_limited' }
        }
      }]
    },
    ...perWorkers((n) => ({
      section: SQLITE,
      server: `petstore SQLite, RATE_LIMIT_BAN_THRESHOLD=${NO_BAN}`,
      prepare: async () => { await main.key(); return petstore(main.url, { RATE_LIMIT_BAN_THRESHOLD: NO_BAN }, n) },
      // Its day spent, not just its minute: a new minute would let one request through.
      scenarios: [spentKey('429-limited', '429 rate_limited (key spent first, never banned)', '1', 'rate_limited')]
    })),
    {
      section: SQLITE,
      server: `petstore SQLite (${count(FEW_ANIMALS)} animals)`,
      prepare: async () => { await few.key(); return petstore(few.url) },
      scenarios: [{ id: 'list-few', scenario: 'GET /v1/pets?limit=20', bare: 'bare-get', peer: LIST_PEER, targets: [p99, rss], request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', await few.key()) }) }]
    },
    {
      section: SQLITE,
      server: `petstore SQLite (${count(MANY_ANIMALS)} animals)`,
      prepare: async () => { await many.key(); return petstore(many.url) },
      scenarios: [{
        id: 'list-many',
        scenario: 'GET /v1/pets?limit=20',
        bare: 'bare-get',
        peer: LIST_PEER,
        targets: [Targets.p50Within(1.2, 'list-few', `${count(FEW_ANIMALS)}-animal p50`), p99, rss],
        request: async (origin) => ({ request: get(origin, '/v1/pets?limit=20', await many.key()) })
      }]
    },
    ...perWorkers((n) => ({
      section: SCALE_OUT,
      server: `petstore ${SCALE_OUT} (${count(ANIMALS)} animals)`,
      prepare: async () => {
        const { databaseUrl, redisUrl } = await postgres()
        return petstore(databaseUrl, { REDIS_URL: redisUrl }, n)
      },
      scenarios: operations('pg-', async () => (await postgres()).token, scaleOutTargets(n), scaleOutPeers(n))
    })),
    {
      section: SCALE_OUT,
      server: `petstore ${SCALE_OUT} (${count(ANIMALS)} animals), traced`,
      prepare: async () => {
        const { databaseUrl, redisUrl } = await postgres()
        return petstore(databaseUrl, { REDIS_URL: redisUrl, ...await traced() })
      },
      scenarios: [tracedList('pg-traced-list', async () => (await postgres()).token, [])]
    }
  ]
}

/** A scaled row's id at a worker count: `list` → `list-w2`; as it is without a count. */
function atWorkers (id: string, n: number | undefined): string {
  return n === undefined ? id : `${id}-w${n}`
}

/** A scaled row at `n` workers, held to the targets of its worker count against its one-worker twin. */
function scale (scenario: Scenario, n: number): Scenario {
  const one = atWorkers(scenario.id, 1)
  const name = 'WORKERS=1'
  return {
    ...scenario,
    id: atWorkers(scenario.id, n),
    workers: { count: n, one },
    targets: [
      ...scenario.targets,
      ...(n === 2 && scenario.scaled?.speedup !== undefined ? [servedByAll(Targets.requestsAtLeast(scenario.scaled.speedup, one, name))] : []),
      ...(CPU_SHARE_AT.includes(n) ? [servedByAll(Targets.cpuWithin(n === 2 ? scenario.scaled?.cpuShare ?? CPU_SHARE : CPU_SHARE, one, name))] : [])
    ]
  }
}

/**
 * A worker count's target, left unjudged when fewer threads were busy than
 * workers asked for: the figures are then those of fewer workers, and on a
 * loaded machine two runs of one worker can differ by 1.3× by themselves.
 */
function servedByAll (target: Target): Target {
  return {
    ...target,
    check: (row, rows) => row.workers !== undefined && row.busyThreads !== undefined && row.busyThreads < row.workers.count ? undefined : target.check(row, rows)
  }
}

/** 100000 → "100,000" */
export function count (n: number): string {
  return n.toLocaleString('en-US')
}

function once<T> (make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined
  return async () => await (made ??= make())
}
