#!/usr/bin/env node
// Runs every compiled test file with Node's test runner, with the servers
// the tests need (scripts/test-services.js) started first and stopped after.
// The files are listed here because `node --test` reads directory and glob
// arguments differently from one Node version to the next.
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
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

const runner = spawn(process.execPath, ['--test', '--test-reporter=spec', ...flags, ...files], {
  stdio: 'inherit',
  env: { ...process.env, ...services.env }
})
// Ctrl-C reaches the runner through the terminal; the servers are stopped once it has ended.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => runner.kill(signal))
const code = await new Promise((resolve) => runner.on('close', (status, signal) => resolve(status ?? (signal === null ? 1 : 128))))
await stop()
process.exit(code)
