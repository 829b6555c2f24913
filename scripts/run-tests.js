#!/usr/bin/env node
// Runs every compiled test file with Node's test runner, with the servers
// the tests need (scripts/test-services.js) started first and stopped after,
// then scans the logs the tests produced for secrets (scripts/log-scan.js):
// a token or an Authorization value in any of them fails the run.
// The files are listed here because `node --test` reads directory and glob
// arguments differently from one Node version to the next.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describeScan, scanLogs } from './log-scan.js'
import { startServices } from './test-services.js'

// The service's tests, and the client library's (client/, its own package).
const roots = ['dist/test', 'client/dist/test']
// `node scripts/run-tests.js [node --test flags] [files…]`: the files named,
// else every compiled test file.
const args = process.argv.slice(2)
const named = args.filter((arg) => arg.endsWith('.test.js'))
const flags = args.filter((arg) => !arg.endsWith('.test.js'))
const files = named.length > 0
  ? named
  : roots.flatMap((root) => readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.js'))
    .map((file) => join(root, file))
    .sort())

if (files.length === 0) {
  console.error(`no test files under ${roots.join(' or ')}: run \`npm run build\` first`)
  process.exit(1)
}

const services = await startServices()
let stopping
const stop = () => { stopping ??= services.stop(); return stopping }

// One folder per run, so that a scan reads this run's logs and no other's.
const logDir = mkdtempSync(join(tmpdir(), 'petstore-test-logs-'))
const runner = spawn(process.execPath, ['--test', '--test-reporter=spec', ...flags, ...files], {
  stdio: 'inherit',
  env: { ...process.env, ...services.env, PETSTORE_TEST_LOG_DIR: logDir }
})
// Ctrl-C reaches the runner through the terminal; the servers are stopped once it has ended.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => runner.kill(signal))
const code = await new Promise((resolve) => runner.on('close', (status, signal) => resolve(status ?? (signal === null ? 1 : 128))))
await stop()
process.exit(Math.max(code, scan()))

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
  // On stderr: stdout ends with the test runner's own summary.
  console.error(`${report}: ${servers} from servers, ${result.files.length - servers} from in-process loggers`)
  return 0
}
