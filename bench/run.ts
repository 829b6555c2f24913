// `npm run bench`: the petstore's speed as ratios of a bare `node:http`
// server measured on the same machine in the same run.
//
// Both servers run as child processes on 127.0.0.1; the load generator
// (autocannon) runs in this process, so it shares the machine's cores with
// them. Each scenario loads the petstore and then the baseline for the same
// time with the same connections, after an unmeasured warm-up of each. The
// petstore runs first on SQLite, then scaled out, on a throwaway PostgreSQL
// cluster and Redis server started for the run (list, create and getPet),
// each against the same baseline figures.
//
//   node dist/bench/run.js [--duration SECONDS] [--connections N] [--json PATH]
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { measure, type LoadRequest, type Measurement } from './load.js'
import { PostgresCluster } from '../test/support/postgres-cluster.js'
import { OwnRedisServer } from '../test/support/redis.js'
import { createKey, startServer, type ServerProcess } from '../test/support/process.js'

const SEED_PETS = 1_000
const SEED_CONCURRENCY = 16
const PAGE = 20
const WARMUP_SECONDS = 2
/** Far above anything this machine can send in a run: the limiter counts, but never refuses. */
const KEY_LIMIT = '1000000000'
const START_TIMEOUT_MS = 15_000
const BARE_SERVER = join(dirname(fileURLToPath(import.meta.url)), 'bare-server.js')
const NEW_PET = JSON.stringify({ name: 'Bench', categoryId: 1, status: 'available' })

interface Options {
  seconds: number
  connections: number
  json: string | undefined
}

interface Scenario {
  name: string
  method: 'GET' | 'POST'
  /** Sent to both servers as is; the baseline ignores it. */
  path: string
  body?: string
  /** The petstore's status for this request, checked once before the load. */
  expect: number
}

interface ScenarioResult {
  scenario: string
  method: string
  path: string
  petstore: Measurement
  bare: Measurement
  /** petstore requests/s ÷ bare requests/s */
  ratio: number
}

class Interrupted extends Error {
  override name = 'Interrupted'
}

class UsageError extends Error {
  override name = 'UsageError'
}

const USAGE = 'usage: npm run bench -- [--duration SECONDS] [--connections N] [--json PATH]'

function parseOptions (argv: readonly string[]): Options {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        duration: { type: 'string', default: '10' },
        connections: { type: 'string', default: '32' },
        json: { type: 'string' }
      },
      strict: true,
      allowPositionals: false
    })
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
  const { values } = parsed
  return {
    seconds: positiveInteger('--duration', values.duration),
    connections: positiveInteger('--connections', values.connections),
    json: values.json === undefined ? undefined : resolve(values.json)
  }
}

function positiveInteger (name: string, raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,5}$/.test(raw)) throw new UsageError(`${name} must be a positive integer, got "${raw ?? ''}"`)
  return Number(raw)
}

function log (message: string): void {
  process.stderr.write(`bench: ${message}\n`)
}

async function main (): Promise<number> {
  const options = parseOptions(process.argv.slice(2))
  const controller = new AbortController()
  const { signal } = controller
  const servers: Array<{ name: string, server: ServerProcess }> = []
  let dir: string | undefined
  let postgres: PostgresCluster | undefined
  let redis: OwnRedisServer | undefined

  const interrupt = (name: NodeJS.Signals): void => {
    if (!signal.aborted) log(`${name}: stopping the servers`)
    controller.abort()
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)

  // A started server also dies with this process, however it ends.
  const start = async (name: string, env: Record<string, string>, args?: readonly string[]): Promise<string> => {
    const server = await startServer(env, START_TIMEOUT_MS, args)
    servers.push({ name, server })
    log(`${name} (pid ${server.pid ?? '?'}) on ${server.origin}`)
    return server.origin
  }
  const check = (): void => { if (signal.aborted) throw new Interrupted('interrupted') }

  try {
    dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
    // PostgreSQL runs as a user of its own and must reach its folder inside.
    chmodSync(dir, 0o755)
    const bare = await start('bare node:http', {}, [BARE_SERVER])
    const bareResults = new Map<string, Measurement>()

    /** The scenarios on one configuration of the petstore; the baseline is measured once per scenario and shared. */
    const runOn = async (label: string, env: Record<string, string>, only?: ReadonlySet<string>): Promise<ScenarioResult[]> => {
      const { token } = await createKey(env, ['--plan', 'enterprise', '--name', 'bench', '--per-minute', KEY_LIMIT, '--per-day', KEY_LIMIT])
      const headers = { authorization: `Bearer ${token}` }
      const petstore = await start(`petstore (${label})`, { ...env, LOG_LEVEL: 'warn' })
      check()
      log(`${label}: seeding ${SEED_PETS} pets`)
      const ids = await seed(petstore, headers, signal)
      const { cursor, depth } = await deepCursor(petstore, headers, SEED_PETS - 2 * PAGE, signal)
      const petId = ids[Math.floor(ids.length / 2)] ?? '1'
      const scenarios: Scenario[] = [
        { name: 'GET /pets?limit=20', method: 'GET', path: `/v1/pets?limit=${PAGE}`, expect: 200 },
        { name: 'POST /pets', method: 'POST', path: '/v1/pets', body: NEW_PET, expect: 201 },
        { name: `GET /pets?limit=20, after ${depth}`, method: 'GET', path: `/v1/pets?limit=${PAGE}&cursor=${cursor}`, expect: 200 },
        { name: 'GET /pets/{id} (deprecated)', method: 'GET', path: `/v1/pets/${petId}`, expect: 200 }
      ]
      const results: ScenarioResult[] = []
      for (const scenario of scenarios.filter((s) => only === undefined || only.has(s.name))) {
        const request = (origin: string): LoadRequest => ({
          url: origin + scenario.path,
          method: scenario.method,
          headers: scenario.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          ...(scenario.body === undefined ? {} : { body: scenario.body })
        })
        await expectStatus(request(petstore), scenario.expect, signal)
        const run = async (origin: string, name: string): Promise<Measurement> => {
          log(`${scenario.name}: ${name}, ${Math.min(WARMUP_SECONDS, options.seconds)} s warm-up, then ${options.seconds} s`)
          await measure(request(origin), { seconds: Math.min(WARMUP_SECONDS, options.seconds), connections: options.connections, signal })
          check()
          const measured = await measure(request(origin), { seconds: options.seconds, connections: options.connections, signal })
          check()
          return measured
        }
        const ownResult = await run(petstore, `petstore (${label})`)
        const baseline = scenario.method === 'POST' ? 'POST' : 'GET'
        const bareResult = bareResults.get(baseline) ?? await run(bare, 'bare node:http')
        bareResults.set(baseline, bareResult)
        results.push({
          scenario: `${scenario.name} [${label}]`,
          method: scenario.method,
          path: scenario.path,
          petstore: ownResult,
          bare: bareResult,
          ratio: ownResult.requestsPerSecond / bareResult.requestsPerSecond
        })
      }
      return results
    }

    const results = await runOn('SQLite', { DATABASE_URL: `sqlite:${join(dir, 'bench.db')}` })
    log('starting a PostgreSQL cluster and a Redis server')
    postgres = await PostgresCluster.start({ dir: join(dir, 'postgres') })
    redis = await OwnRedisServer.start()
    check()
    results.push(...await runOn('PostgreSQL + Redis', { DATABASE_URL: postgres.url, REDIS_URL: redis.url },
      new Set(['GET /pets?limit=20', 'POST /pets', 'GET /pets/{id} (deprecated)'])))

    const machine = { node: process.version, platform: `${process.platform} ${process.arch}`, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown' }
    process.stdout.write(`\n${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}; ` +
      `${options.seconds} s per run, ${options.connections} connections; ${SEED_PETS} pets seeded; ` +
      'the load generator shares these cores.\n\n' + table(results) + '\n')

    if (options.json !== undefined) {
      const report = { date: new Date().toISOString(), machine, durationSeconds: options.seconds, connections: options.connections, seededPets: SEED_PETS, scenarios: results }
      writeFileSync(options.json, JSON.stringify(report, null, 2) + '\n')
      log(`results written to ${options.json}`)
    }

    // A run with failed requests did not measure the operation it names.
    let failed = false
    for (const result of results) {
      for (const [name, m] of [['petstore', result.petstore], ['bare', result.bare]] as const) {
        if (m.non2xx + m.errors + m.timeouts > 0) {
          failed = true
          log(`${result.scenario}: ${name} had ${m.non2xx} non-2xx responses, ${m.errors} errors, ${m.timeouts} timeouts`)
        }
      }
    }
    return failed ? 1 : 0
  } finally {
    await Promise.all(servers.map(async ({ name, server }) => {
      const status = await server.stop()
      if (status !== undefined && status.code !== 0 && status.signal !== 'SIGTERM' && status.signal !== 'SIGINT') {
        log(`${name} ended with ${status.code ?? status.signal}:\n${(server.stdout + server.stderr).slice(-2000)}`)
      }
    }))
    await postgres?.stop()
    await redis?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    process.removeListener('SIGINT', interrupt)
    process.removeListener('SIGTERM', interrupt)
  }
}

/** Adds SEED_PETS pets over HTTP, SEED_CONCURRENCY at a time; returns their ids as sent back. */
async function seed (origin: string, headers: Record<string, string>, signal: AbortSignal): Promise<string[]> {
  const statuses = ['available', 'pending', 'sold']
  const ids: string[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < SEED_PETS) {
      const i = next++
      const body = JSON.stringify({ name: `Pet ${i + 1}`, categoryId: (i % 5) + 1, status: statuses[i % statuses.length] })
      const response = await fetch(`${origin}/v1/pets`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body, signal })
      const text = await response.text()
      const id = /"id":(\d+)/.exec(text)?.[1]
      if (response.status !== 201 || id === undefined) throw new Error(`seeding: POST /v1/pets answered ${response.status}: ${text}`)
      ids.push(id)
    }
  }
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker))
  return ids.sort((a, b) => Number(a) - Number(b))
}

/** Follows `Link: rel="next"` from the first page until at least `depth` pets lie before the cursor. */
async function deepCursor (origin: string, headers: Record<string, string>, depth: number, signal: AbortSignal): Promise<{ cursor: string, depth: number }> {
  let url = `${origin}/v1/pets?limit=${PAGE}`
  let passed = 0
  for (;;) {
    const response = await fetch(url, { headers, signal })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`paging: GET ${url} answered ${response.status}: ${text}`)
    passed += (JSON.parse(text) as unknown[]).length
    const link = nextLink(response.headers.get('link'))
    if (link === undefined) throw new Error(`paging: no next page after ${passed} pets`)
    const cursor = new URL(link).searchParams.get('cursor')
    if (cursor === null) throw new Error(`paging: the next link has no cursor: ${link}`)
    // Only the cursor is taken from the link: every request goes to our own 127.0.0.1 origin.
    url = `${origin}/v1/pets?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`
    if (passed >= depth) return { cursor: encodeURIComponent(cursor), depth: passed }
  }
}

/** The target of `Link: <…>; rel="next"`. https://www.rfc-editor.org/rfc/rfc8288 */
function nextLink (header: string | null): string | undefined {
  for (const part of header?.split(/,(?=\s*<)/) ?? []) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part)
    if (match?.[1] !== undefined && /;\s*rel="?next"?(;|\s|$)/.test(match[2] ?? '')) return match[1]
  }
  return undefined
}

async function expectStatus (request: LoadRequest, status: number, signal: AbortSignal): Promise<void> {
  const response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body ?? null, signal })
  const text = await response.text()
  if (response.status !== status) throw new Error(`${request.method} ${request.url} answered ${response.status}, not ${status}: ${text}`)
}

function table (results: readonly ScenarioResult[]): string {
  const ms = (value: number): string => value.toFixed(2)
  const header = ['scenario', 'petstore req/s', 'bare req/s', 'petstore/bare', 'petstore p50 ms', 'petstore p99 ms', 'bare p50 ms', 'bare p99 ms']
  const rows = results.map((r) => [
    r.scenario,
    Math.round(r.petstore.requestsPerSecond).toString(),
    Math.round(r.bare.requestsPerSecond).toString(),
    r.ratio.toFixed(2),
    ms(r.petstore.latencyMs.p50), ms(r.petstore.latencyMs.p99),
    ms(r.bare.latencyMs.p50), ms(r.bare.latencyMs.p99)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: readonly string[]): string =>
    '| ' + cells.map((cell, i) => i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)).join(' | ') + ' |'
  const rule = '|' + widths.map((w, i) => i === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':').join('|') + '|'
  return [line(header), rule, ...rows.map(line)].join('\n') + '\n'
}

main().then(
  (code) => { process.exitCode = code },
  (error: unknown) => {
    if (error instanceof Interrupted || (error instanceof Error && error.name === 'AbortError')) {
      process.exitCode = 130
      return
    }
    if (error instanceof UsageError) {
      log(`${error.message}\n${USAGE}`)
      process.exitCode = 2
      return
    }
    log(error instanceof Error ? (error.stack ?? error.message) : String(error))
    process.exitCode = 1
  })
