// `npm run bench`: the petstore's speed as ratios of a bare `node:http`
// server measured on the same machine in the same run, beside the simple
// peers a user could write instead (bench/peers/), so that "ahead of every
// peer" is measured, not assumed.
//
// Every server is a child process on 127.0.0.1, pinned to one core; the load
// generator (wrk, or autocannon where wrk is missing) runs pinned to
// another. The petstore runs at its default log level, its log appended to a
// file as an operator would have it. Each row is an unmeasured warm-up, then
// a measured run during which the server's resident memory is sampled.
// The webhook rows (bench/webhooks.ts) run their own warm-up and load, and
// count the server's CPU time until their events have been delivered.
// With --workers, the petstore's main rows run once per worker count
// (WORKERS=N), neither server nor load generator pinned: more than one
// worker needs more than one core, and one worker is measured as the others
// are, so that the worker count is all that differs.
//
//   node dist/bench/run.js [--duration SECONDS] [--connections N] [--json PATH] [--only SUBSTRING] [--skip-scale-out] [--cpu-prof DIR] [--workers N[,N …]]
//
// Exit status: 0 done (targets missed are reported, not failed), 1 a run
// had errors or answers other than the expected one, 2 bad usage, 130
// interrupted.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PostgresCluster } from '../test/support/postgres-cluster.js'
import { OtlpReceiver } from '../test/support/otlp-receiver.js'
import { PROJECT_ROOT } from '../test/support/process.js'
import { OwnRedisServer } from '../test/support/redis.js'
import { choosePinning, moveTo, type Pinning } from './cpus.js'
import { autocannonGenerator, type LoadGenerator, type LoadRequest, type Measurement } from './load.js'
import { USAGE, UsageError, parseOptions, type Options } from './options.js'
import { ANIMALS, FEW_ANIMALS, MANY_ANIMALS, SCALE_OUT, SQLITE, count, plan, type Group } from './plan.js'
import { expectAnswer } from './prepare.js'
import { cpuRatio, missed, ratioToBare, table, workerRatios, type Row } from './report.js'
import { BenchServer, type ServerSpec } from './servers.js'
import { WebhookReceiver } from './webhook-receiver.js'
import { wrkGenerator } from './wrk.js'

const WARMUP_SECONDS = 2
const RSS_SAMPLE_MS = 200
/**
 * The kernel spreads connections over the workers by a hash of their
 * addresses, unevenly: several per worker keep each busy. Every count of a
 * --workers run gets the connections its largest count needs.
 */
const CONNECTIONS_PER_WORKER = 8
/**
 * A thread that used this share of the busiest thread's CPU time during a
 * measured run counts as busy: each worker's main thread (the kernel's hash
 * may give one worker twice another's connections), not the helper threads
 * V8 runs beside it (a few % each). A share of a core would not do: on a
 * shared machine a loaded server may get a fraction of one.
 */
const BUSY_SHARE = 0.25

/** scripts/services/wrk.js: finds wrk, or installs it, or says why autocannon is used. */
interface WrkService {
  start: (options: { log: (message: string) => void }) => Promise<{ env: { PETSTORE_BENCH_WRK?: string } }>
}

interface Setup {
  dir: string
  options: Options
  pinning: Pinning
  generator: LoadGenerator
  signal: AbortSignal
  /** Where PostgreSQL and Redis run, once started for the scaled-out rows. */
  services: { where: string }
}

const controller = new AbortController()

function log (message: string): void {
  process.stderr.write(`bench: ${message}\n`)
}

async function main (): Promise<number> {
  const options = parseOptions(process.argv.slice(2))
  const { signal } = controller
  const interrupt = (name: NodeJS.Signals): void => {
    if (!signal.aborted) log(`${name}: stopping the servers`)
    controller.abort()
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  // PostgreSQL runs as a user of its own and must reach its folder inside.
  chmodSync(dir, 0o755)
  let postgres: PostgresCluster | undefined
  let redis: OwnRedisServer | undefined
  let sink: OtlpReceiver | undefined
  let receiver: Promise<WebhookReceiver> | undefined
  try {
    const pinning = choosePinning()
    const setup: Setup = { dir, options, pinning, generator: await loadGenerator(dir), signal, services: { where: 'not pinned' } }
    log(`load generator: ${setup.generator.name}; ${pinning.done ? `servers on CPU ${pinning.server}, load on CPU ${pinning.load}` : `not pinned: ${pinning.reason}`}`)
    const scaleOut = async (): Promise<{ databaseUrl: string, redisUrl: string }> => {
      log(`starting a PostgreSQL cluster and a Redis server for the ${SCALE_OUT} rows`)
      postgres = await PostgresCluster.start({ dir: join(dir, 'postgres') })
      redis = await OwnRedisServer.start()
      // Beside the load generator, not on the server's core: there they
      // preempted the server and raised its CPU a request by a fifth
      // (docs/PERFORMANCE.md, "Where the scaled-out list's CPU goes").
      if (pinning.done) {
        const failed = moveTo(pinning.load, [...postgres.processes(), ...(redis.pid === undefined ? [] : [redis.pid])])
        setup.services.where = failed === undefined ? `on CPU ${pinning.load} too` : `not pinned (${failed})`
      }
      return { databaseUrl: postgres.url, redisUrl: redis.url }
    }

    const traceSink = async (): Promise<string> => {
      sink ??= await OtlpReceiver.start({ keep: false })
      return sink.endpoint
    }

    const webhookReceiver = async (): Promise<WebhookReceiver> => await (receiver ??= WebhookReceiver.start())

    const rows = new Map<string, Row>()
    const workers = options.workers === undefined ? undefined : [...new Set([1, ...options.workers])].sort((a, b) => a - b)
    const groups = select(plan({ dir, signal, scaleOut, traceSink, webhookReceiver, workers, rowSeconds: WARMUP_SECONDS + options.seconds }), options)
    for (const group of groups) {
      const spansBefore = sink?.count ?? 0
      const measured = await measureGroup(group, setup)
      for (const row of measured) rows.set(row.id, row)
      // Fewer spans than requests sent (warm-up included) means the exporter dropped some: the cost measured is then too low.
      if (sink !== undefined && sink.count > spansBefore) {
        const responses = measured.reduce((sum, row) => sum + row.measurement.responses, 0)
        log(`${group.server}: the trace sink received ${sink.count - spansBefore} spans; the measured runs had ${responses} responses`)
      }
    }
    // The bare server once more: how far the machine itself drifted during
    // the run, which every ratio carries.
    const bare = groups.find((g) => g.scenarios.some((s) => s.id === 'bare-get'))
    const drift = bare === undefined ? [] : (await measureGroup(bare, setup)).map((again) => ({ again, first: rows.get(again.id) }))

    process.stdout.write(report(rows, setup, drift))
    if (options.json !== undefined) {
      writeFileSync(options.json, JSON.stringify(jsonReport(rows, setup, drift), null, 2) + '\n')
      log(`results written to ${options.json}`)
    }

    // A run with failed requests did not measure the operation it names.
    let failed = false
    for (const { scenario, server, measurement: m } of rows.values()) {
      if (m.responses === 0 || m.unexpected + m.errors + m.timeouts > 0) {
        failed = true
        log(`${scenario} (${server}): ${m.responses} responses, ${m.unexpected} unexpected answers (such as ${m.unexpectedStatus}), ${m.errors} socket errors, ${m.timeouts} timeouts`)
      }
    }
    return failed ? 1 : 0
  } finally {
    await sink?.close()
    await (await receiver?.catch(() => undefined))?.close()
    await postgres?.stop()
    await redis?.stop()
    rmSync(dir, { recursive: true, force: true })
    process.removeListener('SIGINT', interrupt)
    process.removeListener('SIGTERM', interrupt)
  }
}

async function loadGenerator (dir: string): Promise<LoadGenerator> {
  const service = await import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'services', 'wrk.js')).href) as WrkService
  const wrk = (await service.start({ log })).env.PETSTORE_BENCH_WRK
  return wrk === undefined ? autocannonGenerator() : wrkGenerator(wrk, dir)
}

/**
 * The rows --only, --skip-scale-out and --workers leave, and the rows they
 * are compared with, and those rows' own (a scaled-out row at two workers
 * needs its one-worker twin, which is compared with the SQLite row).
 */
function select (groups: readonly Group[], { only, skipScaleOut, workers }: Options): Group[] {
  const kept = groups.filter((g) => !(skipScaleOut && g.section === SCALE_OUT))
  const scenarios = kept.flatMap((g) => g.scenarios.map((s) => ({ s, text: `${s.scenario} ${g.server}`.toLowerCase() })))
  const needs = new Map(scenarios.map(({ s }) => [s.id, [
    s.bare, ...(s.peer === undefined ? [] : [s.peer.id]), ...s.targets.flatMap((t) => t.needs ?? []), ...(s.workers === undefined ? [] : [s.workers.one])
  ]]))
  const chosen = new Set(scenarios
    .filter(({ s, text }) => (only === undefined || text.includes(only)) && (s.workers === undefined || workers?.includes(s.workers.count) === true))
    .map(({ s }) => s.id))
  // A Set visits what is added while it is iterated.
  for (const id of chosen) for (const needed of needs.get(id) ?? []) chosen.add(needed)
  return kept
    .map((g) => ({ ...g, scenarios: g.scenarios.filter((s) => chosen.has(s.id)) }))
    .filter((g) => g.scenarios.length > 0)
}

/** Starts the group's server, measures each of its scenarios, stops it. */
async function measureGroup (group: Group, { dir, options, pinning, generator, signal }: Setup): Promise<Row[]> {
  log(`${group.server}: preparing`)
  let spec = profiled(await group.prepare(), group, options)
  if ((group.workers ?? 1) > 1) {
    // Each worker listens itself (SO_REUSEPORT): with PORT=0 each could be given a port of its own.
    spec = { ...spec, env: { ...spec.env, PORT: String(await freePort()) } }
  }
  signal.throwIfAborted()
  const pin = pinning.done && group.workers === undefined
  const server = await BenchServer.start(spec, { dir, cpu: pin ? pinning.server : undefined })
  log(`${group.server}: pid ${server.pid ?? '?'} on ${server.origin}${pin ? '' : ', not pinned'}`)
  try {
    const rows: Row[] = []
    for (const scenario of group.scenarios) {
      const { request, code, release } = await scenario.request(server.origin)
      try {
        rows.push(await measureRow(scenario, request, code))
      } finally {
        release?.()
      }
    }
    return rows

    async function measureRow (scenario: Group['scenarios'][number], request: LoadRequest, code: string | undefined): Promise<Row> {
      await expectAnswer(request, code, signal)
      const connections = scenario.connections ?? (group.workers === undefined ? options.connections : workerConnections(options))
      const load = { connections, cpu: pin ? pinning.load : undefined, signal }
      log(`${scenario.scenario} | ${group.server}: ${WARMUP_SECONDS} s warm-up, then ${options.seconds} s`)
      let measurement: Measurement
      let cpu: { seconds: number | undefined, per: number }
      let rss: ReturnType<typeof sampleRss>
      let threadsBefore: ReadonlyMap<string, number> | undefined
      if (scenario.measure === undefined) {
        await generator.measure(request, { ...load, seconds: WARMUP_SECONDS })
        server.emptyLog()
        rss = sampleRss(server)
        const cpuBefore = server.cpuSeconds()
        threadsBefore = server.threadCpuSeconds()
        measurement = await generator.measure(request, { ...load, seconds: options.seconds }).finally(rss.stop)
        const cpuAfter = server.cpuSeconds()
        cpu = { seconds: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore, per: measurement.responses }
      } else {
        // Its warm-up is its own: the log and memory are counted from the row's start.
        server.emptyLog()
        rss = sampleRss(server)
        threadsBefore = server.threadCpuSeconds()
        const measured = await scenario.measure({
          request,
          cpuSeconds: () => server.cpuSeconds(),
          load: async (request, seconds) => await generator.measure(request, { ...load, seconds }),
          seconds: options.seconds,
          warmupSeconds: WARMUP_SECONDS,
          signal,
          log: (message) => log(`${scenario.scenario}: ${message}`)
        }).finally(rss.stop)
        measurement = measured.measurement
        cpu = { seconds: measured.cpuSeconds, per: measured.per }
      }
      const threadsAfter = server.threadCpuSeconds()
      server.assertRunning()
      const logBytes = server.logBytes()
      server.emptyLog()
      return {
        id: scenario.id,
        section: group.section,
        scenario: scenario.scenario,
        server: group.server,
        bare: scenario.bare,
        peer: scenario.peer,
        targets: scenario.targets,
        measurement,
        maxRssMiB: rss.max(),
        cpuMicrosPerResponse: cpu.seconds === undefined || cpu.per === 0 ? undefined : cpu.seconds * 1e6 / cpu.per,
        logBytesPerResponse: measurement.responses === 0 ? 0 : logBytes / measurement.responses,
        workers: scenario.workers,
        connections,
        busyThreads: busyThreads(threadsBefore, threadsAfter)
      }
    }
  } finally {
    const ended = await server.stop()
    if (ended !== undefined) log(ended)
  }
}

/** How many threads used at least BUSY_SHARE of the busiest one's CPU time between two readings. */
function busyThreads (before: ReadonlyMap<string, number> | undefined, after: ReadonlyMap<string, number> | undefined): number | undefined {
  if (before === undefined || after === undefined) return undefined
  const used = [...after].map(([tid, seconds]) => seconds - (before.get(tid) ?? 0))
  const most = Math.max(0, ...used)
  return most === 0 ? 0 : used.filter((seconds) => seconds >= BUSY_SHARE * most).length
}

/** The connections of every row of a --workers run: as many as its largest worker count keeps busy. */
function workerConnections ({ connections, workers = [1] }: Options): number {
  return Math.max(connections, CONNECTIONS_PER_WORKER * Math.max(...workers))
}

/** A port free on 127.0.0.1 now. */
async function freePort (): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', resolve)
  })
  const address = probe.address()
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port from a probe listening on 127.0.0.1')
  return address.port
}

/**
 * With --cpu-prof, the petstore runs under `node --cpu-prof`: V8 writes the
 * profile when the server stops, named after the rows it served (so
 * `--only` one row gives that row's profile, warm-up and start included);
 * with more than one worker, a folder so named holds one profile a thread.
 * https://nodejs.org/api/cli.html#--cpu-prof
 */
function profiled (spec: ServerSpec, group: Group, { cpuProf }: Options): ServerSpec {
  if (cpuProf === undefined || spec.name !== 'petstore') return spec
  const name = `${group.scenarios.map((s) => s.id).join('+')}-${Date.now()}`
  // Every thread writes a profile of its own: with one name for all, the last written would be the only one left.
  if ((group.workers ?? 1) > 1) return { ...spec, args: ['--cpu-prof', `--cpu-prof-dir=${join(cpuProf, name)}`, ...spec.args] }
  return { ...spec, args: ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`, `--cpu-prof-name=${name}.cpuprofile`, ...spec.args] }
}

/** The highest VmRSS seen while the run lasts. */
function sampleRss (server: BenchServer): { stop: () => void, max: () => number | undefined } {
  let max: number | undefined
  const take = (): void => {
    const now = server.rssMiB()
    if (now !== undefined) max = Math.max(max ?? 0, now)
  }
  take()
  const timer = setInterval(take, RSS_SAMPLE_MS)
  return { stop: () => { clearInterval(timer); take() }, max: () => max }
}

function machine (): string {
  const cores = cpus()
  return `${cores.length} × ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${process.platform} ${process.arch}, Node ${process.version}`
}

/** A bare row measured first and again at the end of the run. */
interface Drift { first: Row | undefined, again: Row }

function driftLine (drift: readonly Drift[]): string[] {
  const parts = drift.flatMap(({ first, again }) => {
    if (first === undefined) return []
    const before = first.measurement.requestsPerSecond
    const after = again.measurement.requestsPerSecond
    const change = 100 * (after / before - 1)
    return [`${again.scenario.split(' ')[0] ?? ''} ${Math.round(before)} req/s first, ${Math.round(after)} at the end (${change >= 0 ? '+' : ''}${change.toFixed(1)} %)`]
  })
  return parts.length === 0 ? [] : [`- drift: the bare server measured again once every other row was done: ${parts.join('; ')}; ratios use the first figures`]
}

function report (rows: ReadonlyMap<string, Row>, { options, pinning, generator, services }: Setup, drift: readonly Drift[]): string {
  const scaledOut = [...rows.values()].some((r) => r.section === SCALE_OUT)
  const counts = [...new Set([...rows.values()].flatMap((r) => r.workers === undefined ? [] : [r.workers.count]))].sort((a, b) => a - b)
  const lines = [
    '# petstore benchmark',
    '',
    `- date: ${new Date().toISOString()}`,
    `- machine: ${machine()}`,
    `- load generator: ${generator.name === 'wrk' ? 'wrk, one thread' : 'autocannon'}; ${options.connections} connections; ` +
      `${options.seconds} s per row after an unmeasured ${WARMUP_SECONDS} s warm-up`,
    `- pinning: ${pinning.done
      ? `every server${counts.length > 0 ? ' but the worker-count ones' : ''} on CPU ${pinning.server}, the load generator on CPU ${pinning.load} (taskset)${scaledOut ? `; PostgreSQL and Redis ${services.where}` : ''}`
      : `none, ${pinning.reason}: the load generator shares the servers' cores`}`,
    ...(counts.length === 0
      ? []
      : [`- workers: the petstore's main rows once per worker count (WORKERS=${counts.join(', ')}), ${workerConnections(options)} connections each; ` +
          `${pinning.done ? 'these servers and their load generator not pinned: they share every core; ' : ''}` +
          'CPU µs is the whole process\'s, every worker\'s threads summed; × 1 worker: req/s and CPU µs ÷ the same operation\'s with WORKERS=1; ' +
          `busy threads: the server's threads that used ≥ ${BUSY_SHARE * 100} % of the busiest one's CPU time during the run`]),
    `- seeded: ${count(ANIMALS)} animals (SQLite${scaledOut ? ', PostgreSQL' : ''}), written into the database; ` +
      `${count(FEW_ANIMALS)} and ${count(MANY_ANIMALS)} for the list p50 comparison`,
    '- logging: the petstore at its default level, one JSON line per request appended to a file; ' +
      'the bare server and the peers log nothing per request, but the peers marked "logging", whose Fastify request log is on at info (two JSON lines per request, to a file)',
    '- peers: the list peer reads the petstore\'s seeded SQLite file read-only; the group-commit peer writes a file of its own; ' +
      'both look the bearer token up in a Map and count each request against its key',
    ...driftLine(drift),
    `- max RSS: the server's VmRSS, sampled every ${RSS_SAMPLE_MS} ms during the measured run; CPU µs: the server's user and system time ` +
      'during the measured run ÷ its responses (steadier than req/s when the machine drifts); × peer CPU: that figure ÷ the peer\'s in this run ' +
      '(lists: the list peer; create: the group-commit peer; getPet: the getPet peer; 401 and 429: Fastify minimal; scaled out: the same operation on SQLite); ' +
      'serves ≥ N× a peer: its CPU µs at most 1/N of this row\'s, as many requests served per CPU-second as N times the peer\'s',
    ''
  ]
  for (const section of [SQLITE, SCALE_OUT]) {
    const own = [...rows.values()].filter((r) => r.section === section)
    if (own.length === 0) continue
    lines.push(`## ${section}`, '')
    lines.push(table(own, rows))
  }
  const misses = missed(rows)
  lines.push(misses.length === 0 ? 'Every target that could be checked was met.' : 'Targets missed:', ...misses.map((m) => `- ${m}`), '')
  if (counts.length > 0) lines.push('Workers (each row against the same operation with WORKERS=1):', ...workerLines(rows), '')
  return lines.join('\n')
}

/** The targets that set a row against its one-worker twin, met or not; and the rows whose workers did not all work. */
function workerLines (rows: ReadonlyMap<string, Row>): string[] {
  const lines = [...rows.values()].flatMap((row) => {
    if (row.workers === undefined || row.workers.count === 1) return []
    const name = `${row.scenario} (${row.server})`
    if (row.busyThreads !== undefined && row.busyThreads < row.workers.count) {
      const { requests, cpu } = workerRatios(row, rows)
      return [`- ${name}: only ${row.busyThreads} busy thread(s) for ${row.workers.count} workers: not every worker served, its targets not judged ` +
        `(req/s ${requests?.toFixed(2) ?? '—'}×, CPU ${cpu?.toFixed(2) ?? '—'}× WORKERS=1)`]
    }
    const one = row.workers.one
    return row.targets.filter((t) => t.needs === one).map((target) => {
      const check = target.check(row, rows)
      return `- ${name}: ${target.label}: ${check === undefined ? 'not measured' : `${check.met ? 'met' : 'missed'}, ${check.figure}`}`
    })
  })
  return lines.length === 0 ? ['- no target at these worker counts (WORKERS=2: req/s of list and create; 2 and 4: CPU per request)'] : lines
}

function jsonReport (rows: ReadonlyMap<string, Row>, { options, pinning, generator }: Setup, drift: readonly Drift[]): unknown {
  return {
    date: new Date().toISOString(),
    machine: machine(),
    loadGenerator: generator.name,
    pinning,
    durationSeconds: options.seconds,
    warmupSeconds: WARMUP_SECONDS,
    connections: options.connections,
    animals: { main: ANIMALS, few: FEW_ANIMALS, many: MANY_ANIMALS },
    bareAtTheEnd: drift.map(({ again }) => ({ id: again.id, requestsPerSecond: again.measurement.requestsPerSecond })),
    rows: [...rows.values()].map((row) => ({
      id: row.id,
      section: row.section,
      scenario: row.scenario,
      server: row.server,
      ...row.measurement,
      maxRssMiB: row.maxRssMiB ?? null,
      cpuMicrosPerResponse: row.cpuMicrosPerResponse ?? null,
      ratioToBare: ratioToBare(row, rows) ?? null,
      peer: row.peer?.id ?? null,
      cpuRatioToPeer: (row.peer === undefined ? undefined : cpuRatio(row, rows.get(row.peer.id))) ?? null,
      logBytesPerResponse: row.logBytesPerResponse,
      connections: row.connections,
      workers: row.workers?.count ?? null,
      ...(row.workers === undefined ? {} : { requestsRatioToOneWorker: workerRatios(row, rows).requests ?? null, cpuRatioToOneWorker: workerRatios(row, rows).cpu ?? null }),
      busyThreads: row.busyThreads ?? null,
      targets: row.targets.map((t) => ({ target: t.label, ...(t.check(row, rows) ?? { met: null }) }))
    }))
  }
}

main().then(
  (code) => { process.exitCode = code },
  (error: unknown) => {
    if (controller.signal.aborted) {
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
