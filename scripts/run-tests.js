#!/usr/bin/env node
// Runs every compiled test file with Node's test runner, with the servers
// the tests need (scripts/test-services.js) started first and stopped after,
// then scans the logs the tests produced for secrets (scripts/log-scan.js):
// a token or an Authorization value in any of them fails the run. Its last
// line counts the tests, `N passed, N failed` (then skipped and todo, when
// any), on success and failure alike (test/support/test-summary.ts).
// The files are listed here because `node --test` reads directory and glob
// arguments differently from one Node version to the next.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describeScan, scanLogs } from './log-scan.js'
import { startServices } from './test-services.js'

// The service's tests, and the client library's (client/, its own package).
const roots = ['dist/test', 'client/dist/test']
/** The reporter that writes the last line, compiled with the tests. */
const summaryReporter = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'dist/test/support/test-summary.js')
// `node scripts/run-tests.js [node --test flags] [files…]`: the files named,
// else every compiled test file.
const args = process.argv.slice(2)
const named = args.filter((arg) => arg.endsWith('.test.js'))
const flags = args.filter((arg) => !arg.endsWith('.test.js'))
// Most of the time a file takes is spent waiting for the services and
// processes it started, so two files run at once even on two cores (Node's
// default is one fewer than the cores), but for those in ALONE.
const concurrencyGiven = flags.some((flag) => flag.startsWith('--test-concurrency'))
const concurrency = concurrencyGiven ? [] : [`--test-concurrency=${Math.max(2, availableParallelism() - 1)}`]
/**
 * Files that bring a load of their own (several instances, thousands of
 * requests, a hundred clients at once): they run one at a time, in this
 * order, after the others, so that two such loads never meet on a small
 * machine and make each other's bounds fail.
 */
const ALONE = ['crash', 'crash-postgres', 'key-changes', 'shutdown', 'webhooks-scale-out', 'scale-out']
  .map((name) => join('dist', 'test', 'e2e', `${name}.test.js`))
/**
 * Files that spend most of their time waiting (the SIGKILL test of
 * webhooks waits a minute for retries and leases to come due; pages in a
 * browser, which waits on the service; npm), using under half a core: they
 * run one at a time, in this order, in a runner of their own beside the
 * others, not taking one of their places, and end before those do.
 */
const BESIDE = ['e2e/webhooks-crash', 'e2e/console', 'e2e/console-webhooks', 'e2e/docs-page', 'client-package', 'http/edge']
  .map((name) => join('dist', 'test', `${name}.test.js`))
/**
 * Files that mostly wait, on short timers (retries, reconnections, slots
 * freed, time-outs) or on PostgreSQL and Redis, using under half a core
 * when run alone: they run one at a time beside the ALONE files, on the
 * core those leave idle, and end about when the last of those (several
 * instances through Redis's faults, whose requests are timed) starts.
 */
const WITH_ALONE = new Set([
  'webhooks/delivery', 'webhooks/announcements', 'webhooks/failing-endpoints',
  'limits/resilient-store', 'limits/redis-slots', 'limits/in-flight', 'e2e/timeouts',
  'db/postgres/storage', 'plugins/gate-lookups', 'plugins/gate-concurrency', 'routes/key-usage'
].map((name) => join('dist', 'test', `${name}.test.js`)))
/**
 * The longest files start first, then the other end-to-end files, so that
 * no long file starts last and runs by itself at the end.
 */
const LONGEST = ['copy-store', 'backup', 'tracing', 'usage', 'cli']
  .map((name) => join('dist', 'test', 'e2e', `${name}.test.js`))
const startOrder = (file) => {
  const longest = LONGEST.indexOf(file)
  return longest >= 0 ? longest : file.includes(`${sep}e2e${sep}`) ? LONGEST.length : LONGEST.length + 1
}
/**
 * In a whole run, the component tests (every folder but e2e/) run up to
 * this many files to a process, one folder's files together, each file's
 * tests inside a suite named after it: a process of its own costs a file
 * about 0.7 s of CPU (Node.js starting, the runner, and loading Fastify,
 * the drivers and the service's modules), most of the time such a file
 * takes. The end-to-end files keep a process each: they start services and
 * signal processes.
 */
const GROUP_SIZE = 6
/**
 * Files whose subject is the same on every Node.js: pages driven in
 * Chromium (the server side of each is tested on its own, by files that
 * run everywhere), the docs and the import graph, compose.yaml, the
 * client's generated types. With PETSTORE_TEST_ONCE=skip
 * (`npm run test:node`, after they ran on this machine's Node.js) they do
 * not run again (docs/DEVELOPING.md: Node.js versions).
 */
const ONCE = new Set([
  'e2e/console', 'e2e/console-webhooks', 'e2e/docs-page', 'docs-check', 'cycles-check', 'compose', 'client-types'
].map((name) => join('dist', 'test', `${name}.test.js`)))
const skipOnce = process.env.PETSTORE_TEST_ONCE === 'skip'
// With PETSTORE_TEST_WORKERS (docs/WORKERS.md) only the files that start the
// service run: the others never see the variable, and would run as they did.
const withWorkers = (process.env.PETSTORE_TEST_WORKERS ?? '') !== ''
const startsTheService = (file) => file.includes(`${sep}e2e${sep}`) || /\bstartServers?\b|\bServerProcess\b|'serve'/.test(readFileSync(file, 'utf8'))
const files = named.length > 0
  ? named
  : roots.flatMap((root) => readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.js'))
    // tsc leaves the output of a moved or removed test behind: only a file whose source is still there runs.
    .filter((file) => existsSync(join(root.replace(/dist\/test$/, 'test'), file.replace(/\.js$/, '.ts'))))
    .map((file) => join(root, file))
    .filter((file) => !withWorkers || startsTheService(file))
    .filter((file) => !skipOnce || !ONCE.has(file))
    .sort()
    .sort((a, b) => startOrder(a) - startOrder(b)))

if (files.length === 0) {
  console.error(`no test files under ${roots.join(' or ')}: run \`npm run build\` first`)
  process.exit(1)
}
if (!existsSync(summaryReporter)) {
  console.error('no dist/test/support/test-summary.js, the reporter that counts the tests: run `npm run build` first')
  process.exit(1)
}

// One folder per run for the files that import a group of test files.
const groupDir = mkdtempSync(join(tmpdir(), 'petstore-test-groups-'))
const services = await startServices()
let stopping
const stop = () => { stopping ??= services.stop(); return stopping }

// One folder per run, so that a scan reads this run's logs and no other's.
const logDir = mkdtempSync(join(tmpdir(), 'petstore-test-logs-'))
const summaryDir = mkdtempSync(join(tmpdir(), 'petstore-test-summary-'))
// Each phase is one runner or more at once; a runner beside another writes
// its report into a file, shown when it ends, so that two reports never mix.
const oneAtATime = [...flags, ...(concurrencyGiven ? [] : ['--test-concurrency=1'])]
const phases = [
  [
    { files: inGroups(files.filter((file) => !ALONE.includes(file) && !BESIDE.includes(file) && !WITH_ALONE.has(file))), flags: [...flags, ...concurrency] },
    { files: BESIDE.filter((file) => files.includes(file)), flags: oneAtATime, reportTo: join(summaryDir, 'beside.txt') }
  ],
  [
    { files: ALONE.filter((file) => files.includes(file)), flags: oneAtATime },
    { files: files.filter((file) => WITH_ALONE.has(file)), flags: oneAtATime, reportTo: join(summaryDir, 'with-alone.txt') }
  ]
].map((runners) => runners.filter((phase) => phase.files.length > 0)).filter((runners) => runners.length > 0)
const runners = new Set()
let interrupted = false
// Each runner leads a process group of its own, which holds its test files
// and every process they start: Ctrl-C or SIGTERM is passed on to the
// whole group, so that no service a test started outlives the run; the
// servers are stopped once the runners have ended, and no other phase starts.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => { interrupted = true; for (const runner of runners) signalGroup(runner.pid, signal) })
let code = 0
let summaries = 0
for (const phase of phases) {
  if (interrupted) break
  const codes = await Promise.all(phase.map(async ({ files, flags, reportTo }) => {
    const reporters = [
      '--test-reporter=spec', `--test-reporter-destination=${reportTo ?? 'stdout'}`,
      `--test-reporter=${summaryReporter}`, `--test-reporter-destination=${join(summaryDir, `summary-${summaries++}.txt`)}`
    ]
    const runner = spawn(process.execPath, ['--test', ...reporters, ...flags, ...files], {
      stdio: 'inherit',
      detached: true,
      env: { ...process.env, ...services.env, PETSTORE_TEST_LOG_DIR: logDir }
    })
    runners.add(runner)
    const status = await new Promise((resolve) => runner.on('close', (status, signal) => resolve(status ?? (signal === null ? 1 : 128))))
    runners.delete(runner)
    // Whatever its test files left running (a test killed by its timeout leaves its servers).
    signalGroup(runner.pid, 'SIGKILL')
    if (reportTo !== undefined && existsSync(reportTo)) process.stdout.write(readFileSync(reportTo))
    return status
  }))
  code = Math.max(code, ...codes)
}
await stop()
rmSync(groupDir, { recursive: true, force: true })
const scanned = scan()
console.log(summary(code, scanned))
process.exit(Math.max(code, scanned))

/**
 * `files`, in a whole run with the component tests' files replaced by files
 * that each import up to GROUP_SIZE of one folder (GROUP_SIZE above), placed
 * after the LONGEST files and before the other end-to-end ones.
 */
function inGroups (files) {
  if (named.length > 0) return files
  const component = (file) => !file.includes(`${sep}e2e${sep}`) && roots.some((root) => file.startsWith(`${root}${sep}`))
  const byFolder = new Map()
  for (const file of files.filter(component)) {
    const folder = relativeFolder(file)
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), file])
  }
  const groups = []
  for (const [folder, members] of byFolder) {
    for (let i = 0; i < members.length; i += GROUP_SIZE) {
      const group = join(groupDir, `${folder.replaceAll(sep, '-')}-${i / GROUP_SIZE + 1}.test.js`)
      writeFileSync(group, [
        "import { describe } from 'node:test'",
        ...members.slice(i, i + GROUP_SIZE).map((file) =>
          `describe(${JSON.stringify(file)}, async () => { await import(${JSON.stringify(pathToFileURL(resolve(file)).href)}) })`)
      ].join('\n') + '\n')
      groups.push(group)
    }
  }
  const rest = files.filter((file) => !component(file))
  const longest = rest.filter((file) => LONGEST.includes(file))
  return [...longest, ...groups, ...rest.filter((file) => !LONGEST.includes(file))]
}

/** The folder of a test file under its root, such as `routes`, `db/sqlite` or `client`. */
function relativeFolder (file) {
  const root = roots.find((candidate) => file.startsWith(`${candidate}${sep}`))
  const folder = dirname(file.slice(root.length + 1))
  return folder === '.' ? (root === 'dist/test' ? 'root' : root.split(sep)[0]) : folder
}

/** Sends `signal` to every process of the group `pid` leads; a group already gone is no failure. */
function signalGroup (pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch (error) {
    if (error.code !== 'ESRCH') throw error
  }
}

/** The run's last lines: each failed test, then the reporter's counts, and why the run failed when they do not say. */
function summary (code, scanned) {
  const reports = Array.from({ length: summaries }, (_, i) => join(summaryDir, `summary-${i}.txt`)).map((file) => existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [''])
  rmSync(summaryDir, { recursive: true, force: true })
  // Each report: a line per failed test, then the counts.
  const lines = reports.map((report) => report.at(-1))
  const failedTests = reports.flatMap((report) => report.slice(0, -1))
  if (lines.some((line) => line === '')) return [...failedTests, `no test results: the test runner ended with code ${code} before it counted them`].join('\n')
  const counts = addedUp(lines)
  const failedToo = [
    ...(code !== 0 && /\b0 failed\b/.test(counts) ? [`the test runner ended with code ${code}`] : []),
    ...(scanned !== 0 ? ['the log scan failed'] : [])
  ]
  return [...failedTests, failedToo.length === 0 ? counts : `${counts} (${failedToo.join('; ')})`].join('\n')
}

/** The reporter's lines of each phase, `N passed, N failed[, N skipped][, N todo]`, added up into one. */
function addedUp (lines) {
  const total = { passed: 0, failed: 0, skipped: 0, todo: 0 }
  for (const line of lines) {
    for (const [, n, what] of line.matchAll(/(\d+) (passed|failed|skipped|todo)/g)) total[what] += Number(n)
  }
  return [`${total.passed} passed`, `${total.failed} failed`, ...(total.skipped > 0 ? [`${total.skipped} skipped`] : []), ...(total.todo > 0 ? [`${total.todo} todo`] : [])].join(', ')
}

/** 1 when the logs hold a secret, or when a whole run left no server log to scan (the capture itself broke). */
function scan () {
  const result = scanLogs(logDir)
  const report = describeScan(logDir, result)
  const servers = result.files.filter((name) => name.includes('.server-')).length
  if (result.findings.length > 0) {
    console.error(report)
    console.error(`log scan: the logs are kept in ${logDir}`)
    return 1
  }
  rmSync(logDir, { recursive: true, force: true })
  if (named.length === 0 && servers === 0) {
    console.error('log scan: FAILED: the whole suite ran but no server log was kept: test/support/test-logs.ts no longer receives them')
    return 1
  }
  // On stderr: stdout ends with the line that counts the tests.
  console.error(`${report}: ${servers} from servers, ${result.files.length - servers} from in-process loggers`)
  return 0
}
