// `npm run bench:overload`: a bad day, measured (docs/PERFORMANCE.md, "A
// greedy key"). One key within its window limits sends GET /v1/pets on 512
// connections in a tight loop (wrk), while a polite key sends one request
// every 500 ms and a probe asks /healthz every 200 ms on a fresh connection
// with a 1 s timeout, as a load balancer does, on the public port and on the
// admin listener. First the polite key and the
// probe alone, then beside the greedy key. Nothing is pinned: the greedy
// client, the service and the polite client share the machine, as they would.
//
//   npm run build && node dist/bench/overload.js [--duration SECONDS] [--workers N] [--postgres] [--bin PATH]
//
// `--bin` runs another build's bin/petstore.js (an earlier commit's, to
// compare); its store is made by that build's own CLI.
import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request, type IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as delay } from 'node:timers/promises'
import { PostgresCluster } from '../test/support/postgres-cluster.js'
import { freePort } from '../test/support/ports.js'
import { CLI, PROJECT_ROOT, START_FLAGS } from '../test/support/process.js'
import { BenchServer } from './servers.js'

const GREEDY_CONNECTIONS = 512
const POLITE_EVERY_MS = 500
const PROBE_EVERY_MS = 200
const PROBE_TIMEOUT_MS = 1_000
const POLITE_TIMEOUT_MS = 10_000
const RESULT = 'OVERLOAD-RESULT '

function log (message: string): void {
  process.stderr.write(`overload bench: ${message}\n`)
}

interface Timed { ms: number, status: number | 'failed' }

/** One GET on a connection of its own (probe) or the agent's keep-alive one (polite). */
async function timedGet (url: string, headers: Record<string, string>, timeoutMs: number, keepAlive: boolean): Promise<Timed> {
  const started = performance.now()
  return await new Promise((resolve) => {
    const done = (status: number | 'failed'): void => { resolve({ ms: performance.now() - started, status }) }
    const outgoing = request(url, { headers: { ...headers, connection: keepAlive ? 'keep-alive' : 'close' }, agent: keepAlive ? undefined : false, timeout: timeoutMs }, (response: IncomingMessage) => {
      response.resume().on('end', () => { done(response.statusCode ?? 0) }).on('error', () => { done('failed') })
    })
    outgoing.on('timeout', () => { outgoing.destroy(new Error('timeout')) }).on('error', () => { done('failed') })
    outgoing.end()
  })
}

/** Sends `get` every `everyMs` until `signal` says stop, each on its own clock: a slow answer does not delay the next. */
async function every (everyMs: number, stop: AbortSignal, get: () => Promise<Timed>): Promise<Timed[]> {
  const pending: Array<Promise<Timed>> = []
  while (!stop.aborted) {
    pending.push(get())
    await delay(everyMs)
  }
  return await Promise.all(pending)
}

function percentile (values: number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}

function describe (timed: Timed[], expected: number): string {
  const ms = timed.map((t) => t.ms)
  const off = timed.filter((t) => t.status !== expected)
  const offText = off.length === 0 ? 'none' : [...new Set(off.map((t) => String(t.status)))].map((s) => `${off.filter((t) => String(t.status) === s).length} × ${s}`).join(', ')
  return `${timed.length} sent, p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms, not ${expected}: ${offText}`
}

/** wrk's script: the statuses that matter counted in the thread, added up when done (wrk's `done` runs in a state of its own). */
function greedyScript (token: string): string {
  return `wrk.headers["authorization"] = "Bearer ${token}"
ok, capped, limited, shed, other = 0, 0, 0, 0, 0
response = function (status, headers, body)
  if status == 200 then ok = ok + 1
  elseif status == 429 and string.find(body, "concurrency_limited", 1, true) then capped = capped + 1
  elseif status == 429 then limited = limited + 1
  elseif status == 503 then shed = shed + 1
  else other = other + 1 end
end
local threads = {}
setup = function (thread) table.insert(threads, thread) end
done = function (summary, latency)
  local t = { ok = 0, capped = 0, limited = 0, shed = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(t) do t[name] = t[name] + thread:get(name) end
  end
  io.write(string.format('${RESULT}{"statuses":{"200":%d,"429 concurrency_limited":%d,"429 other":%d,"503":%d,"other":%d},"seconds":%f,"timeouts":%d,"connect":%d,"read":%d,"p50":%d,"p99":%d}\\n',
    t.ok, t.capped, t.limited, t.shed, t.other, summary.duration / 1e6, summary.errors.timeout, summary.errors.connect, summary.errors.read,
    latency:percentile(50), latency:percentile(99)))
end
`
}

async function runCli (bin: string, args: string[], env: Record<string, string>): Promise<string> {
  return await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH ?? '', ...env } })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
    child.on('close', (code) => { code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')}: exit ${code ?? '?'}\n${err}`)) })
  })
}

/** wrk's path: scripts/services/wrk.js finds it, or installs Debian's package. */
async function findWrk (): Promise<string> {
  const service = await import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'services', 'wrk.js')).href) as {
    start: (options: { log: (message: string) => void }) => Promise<{ env: { PETSTORE_BENCH_WRK?: string } }>
  }
  const wrk = (await service.start({ log })).env.PETSTORE_BENCH_WRK
  if (wrk === undefined) throw new Error('this benchmark needs wrk: 512 connections in a loop are more than autocannon sends from one core')
  return wrk
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: { duration: { type: 'string', default: '20' }, workers: { type: 'string', default: '1' }, postgres: { type: 'boolean', default: false }, bin: { type: 'string' } }
  })
  const seconds = Number(values.duration)
  const bin = values.bin === undefined ? CLI : resolve(values.bin)
  const wrkPath = await findWrk()
  const dir = mkdtempSync(join(tmpdir(), 'petstore-overload-'))
  chmodSync(dir, 0o755)
  let postgres: PostgresCluster | undefined
  let server: BenchServer | undefined
  try {
    if (values.postgres) postgres = await PostgresCluster.start({ dir: join(dir, 'postgres') })
    const env = { DATABASE_URL: postgres?.url ?? `sqlite:${join(dir, 'p.db')}` }
    const lastLine = (text: string): string => text.trim().split('\n').at(-1) ?? ''
    const greedy = lastLine(await runCli(bin, ['keys', 'create', '--plan', 'enterprise', '--name', 'greedy', '--per-minute', '100000000', '--per-day', '1000000000'], env))
    const polite = lastLine(await runCli(bin, ['keys', 'create', '--plan', 'pro', '--name', 'polite'], env))
    const adminPort = await freePort()
    server = await BenchServer.start({ name: 'petstore', args: [...START_FLAGS, bin, 'serve'], env: { ...env, WORKERS: values.workers, ADMIN_PORT: String(adminPort) } }, { dir, cpu: undefined })
    const origin = server.origin
    const adminOrigin = `http://127.0.0.1:${adminPort}`
    log(`${values.postgres ? 'PostgreSQL' : 'SQLite'}, WORKERS=${values.workers}, Node.js ${process.version}, ${bin === CLI ? 'this build' : bin}`)
    for (let i = 0; i < 20; i++) await timedGet(`${origin}/v1/pets`, { authorization: `Bearer ${greedy}` }, 5_000, false)

    const phase = async (withGreedy: boolean): Promise<void> => {
      const stop = new AbortController()
      const politeRuns = every(POLITE_EVERY_MS, stop.signal, async () => await timedGet(`${origin}/v1/pets`, { authorization: `Bearer ${polite}` }, POLITE_TIMEOUT_MS, true))
      const probes = every(PROBE_EVERY_MS, stop.signal, async () => await timedGet(`${origin}/healthz`, {}, PROBE_TIMEOUT_MS, false))
      const adminProbes = every(PROBE_EVERY_MS, stop.signal, async () => await timedGet(`${adminOrigin}/healthz`, {}, PROBE_TIMEOUT_MS, false))
      let greedyLine = ''
      const cpuBefore = server?.cpuSeconds() ?? 0
      if (withGreedy) {
        const script = join(dir, 'greedy.lua')
        writeFileSync(script, greedyScript(greedy))
        greedyLine = await new Promise<string>((resolve, reject) => {
          const wrk = spawn(wrkPath, ['-t1', `-c${GREEDY_CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, `${origin}/v1/pets`])
          let out = ''
          wrk.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
          wrk.on('error', reject).on('close', () => { resolve(out.split('\n').find((line) => line.startsWith(RESULT))?.slice(RESULT.length) ?? '') })
        })
      } else {
        await delay(seconds * 1000)
      }
      stop.abort()
      const cpu = (server?.cpuSeconds() ?? 0) - cpuBefore
      const [politeTimed, probeTimed, adminProbeTimed] = await Promise.all([politeRuns, probes, adminProbes])
      console.log(`\n${withGreedy ? `beside a greedy key on ${GREEDY_CONNECTIONS} connections` : 'alone'} (${seconds} s, the service used ${cpu.toFixed(1)} s of CPU):`)
      console.log(`  polite key, GET /v1/pets every ${POLITE_EVERY_MS} ms: ${describe(politeTimed, 200)}`)
      console.log(`  /healthz every ${PROBE_EVERY_MS} ms, ${PROBE_TIMEOUT_MS} ms timeout: ${describe(probeTimed, 200)}`)
      console.log(`  /healthz on the admin listener, the same: ${describe(adminProbeTimed, 200)}`)
      if (greedyLine !== '') {
        const result = JSON.parse(greedyLine) as { statuses: Record<string, number>, seconds: number, timeouts: number, connect: number, read: number, p50: number, p99: number }
        const perSecond = Object.entries(result.statuses).map(([status, n]) => `${status}: ${(n / result.seconds).toFixed(0)}/s`).join(', ')
        console.log(`  greedy key: ${perSecond}; p50 ${(result.p50 / 1000).toFixed(1)} ms, p99 ${(result.p99 / 1000).toFixed(1)} ms; wrk timeouts ${result.timeouts}, connect errors ${result.connect}, read errors ${result.read}`)
      }
    }
    await phase(false)
    await phase(true)
  } finally {
    await server?.stop()
    await postgres?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((error: unknown) => {
  log(error instanceof Error ? error.stack ?? error.message : String(error))
  process.exitCode = 1
})
