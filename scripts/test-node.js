#!/usr/bin/env node
// `npm run test:node -- 24 [26 …]`: the README's two steps, `npm install`
// and `npm test`, on other Node.js major versions. The test files whose
// subject is the same on every Node.js (the pages driven in Chromium, the
// docs check, …: ONCE in scripts/run-tests.js) are left out there, having
// run with `npm test` on this machine's. With `--workers N`, every
// service the tests start runs N workers (PETSTORE_TEST_WORKERS,
// docs/WORKERS.md). `npm run test:node -- 24 --run SCRIPT [ARGS …]` runs
// `npm run SCRIPT -- ARGS` in the copy instead of `npm test` (the benchmark
// on Node 24: `--run bench --workers 1,2`, docs/PERFORMANCE.md).
//
// For each major it takes the newest `node-<platform>-<arch>@MAJOR` package
// from the npm registry (the official binaries, with the C headers that
// native modules build against) into a cache folder, copies the project
// there, and runs both steps in the copy with that Node first on PATH. The
// copy keeps its node_modules between runs; the project's own node_modules,
// built for the Node that runs this script, is never touched.
//
// Installs run with `strict-allow-scripts`, as a newer npm does by default:
// a dependency whose install script package.json's `allowScripts` does not
// cover fails the run instead of going unnoticed.
//
// The cache is $PETSTORE_CACHE_DIR, else $XDG_CACHE_HOME/petstore, else
// ~/.cache/petstore.
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const CACHE = process.env.PETSTORE_CACHE_DIR ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'petstore')
/** What the copy never takes from the project: built or installed for the Node running this script. */
const NOT_COPIED = new Set(['node_modules', 'dist', 'data', '.git'])
const USAGE = 'usage: npm run test:node -- [--workers N] MAJOR [MAJOR …] [--run SCRIPT [ARGS …]]   (for example: npm run test:node -- 22 24 26)'

function fail (message, code = 1) {
  console.error(message)
  process.exit(code)
}

/** The registry's package of official binaries for this machine. */
function binaryPackage () {
  const platform = { linux: 'linux', darwin: 'darwin' }[process.platform]
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch]
  if (platform === undefined || arch === undefined) fail(`no Node.js binary package for ${process.platform}-${process.arch}`)
  return `node-${platform}-${arch}`
}

function compareVersions (a, b) {
  const [x, y] = [a, b].map((version) => version.split('.').map(Number))
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]
  return 0
}

/** The newest release of `major` on the registry, or the newest one cached when the registry cannot be asked. */
function resolveVersion (pkg, major) {
  const view = spawnSync('npm', ['view', `${pkg}@${major}`, 'version', '--json'], { encoding: 'utf8', env: cleanEnv() })
  if (view.status === 0 && view.stdout.trim() !== '') {
    const found = [].concat(JSON.parse(view.stdout))
    return found.sort(compareVersions).at(-1)
  }
  const cached = existsSync(join(CACHE, 'node'))
    ? readdirSync(join(CACHE, 'node')).filter((name) => name.startsWith(`v${major}.`)).map((name) => name.slice(1))
    : []
  if (cached.length === 0) fail(`cannot find ${pkg}@${major} on the registry:\n${view.stderr}`)
  return cached.sort(compareVersions).at(-1)
}

/** Unpacks the binaries once per version; the folder appears only when complete. */
function installNode (pkg, version) {
  const nodeDir = join(CACHE, 'node', `v${version}`)
  if (existsSync(join(nodeDir, 'bin', 'node'))) return nodeDir
  mkdirSync(join(CACHE, 'node'), { recursive: true })
  const staging = mkdtempSync(join(CACHE, 'node', '.download-'))
  try {
    console.log(`fetching ${pkg}@${version} into ${nodeDir}`)
    run('npm', ['pack', `${pkg}@${version}`, '--pack-destination', staging, '--silent'], { cwd: staging, env: cleanEnv() })
    const tarball = readdirSync(staging).find((name) => name.endsWith('.tgz'))
    if (tarball === undefined) fail(`npm pack ${pkg}@${version} wrote no tarball`)
    const unpacked = join(staging, 'node')
    mkdirSync(unpacked)
    run('tar', ['xzf', join(staging, tarball), '-C', unpacked, '--strip-components=1'], { cwd: staging })
    renameSync(unpacked, nodeDir)
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
  return nodeDir
}

/** The files a fresh clone of the working tree would have: tracked and new, not ignored. */
function projectFiles () {
  const git = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
  if (git.status !== 0) return undefined
  return git.stdout.split('\0').filter((file) => file !== '' && existsSync(join(ROOT, file)))
}

/** Refreshes the project copy for `major`, keeping only its node_modules from the last run. */
function prepareCopy (major) {
  const rootId = createHash('sha256').update(ROOT).digest('hex').slice(0, 12)
  const copy = join(CACHE, 'trees', `${rootId}-node${major}`)
  mkdirSync(copy, { recursive: true })
  for (const entry of readdirSync(copy)) {
    if (entry !== 'node_modules') rmSync(join(copy, entry), { recursive: true, force: true })
  }
  const files = projectFiles()
  if (files === undefined) {
    cpSync(ROOT, copy, { recursive: true, filter: (source) => !NOT_COPIED.has(source.slice(ROOT.length + 1).split('/')[0]) })
  } else {
    for (const file of files) cpSync(join(ROOT, file), join(copy, file), { recursive: true })
  }
  return copy
}

/** This environment without what npm and `node --test` set for their own children. */
function cleanEnv (extra = {}) {
  const env = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && !['INIT_CWD', 'NODE', 'NODE_TEST_CONTEXT'].includes(name)) env[name] = value
  }
  return { ...env, ...extra }
}

function run (command, args, options) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options })
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`)
}

/**
 * Runs a command, echoing its output, and resolves with its exit code, the
 * last line `npm test` counts the tests in (scripts/run-tests.js), if any,
 * and the `failed: …` lines it prints before that one.
 */
function runEchoed (command, args, options) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let summary
    const failedTests = []
    let pending = ''
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk)
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop()
      for (const line of lines) {
        if (/^\d+ passed, \d+ failed\b/.test(line.trim())) summary = line.trim()
        if (line.startsWith('failed: ')) failedTests.push(line)
      }
    })
    child.stderr.on('data', (chunk) => process.stderr.write(chunk))
    child.on('close', (code, signal) => {
      if (/^\d+ passed, \d+ failed\b/.test(pending.trim())) summary = pending.trim()
      resolve({ code: code ?? signal, summary, failedTests })
    })
  })
}

/** `then`: the npm script and its arguments to run in the copy, undefined for `npm test`; `workers`: PETSTORE_TEST_WORKERS for that test run. */
async function testOn (major, then, workers) {
  const pkg = binaryPackage()
  const version = resolveVersion(pkg, major)
  const nodeDir = installNode(pkg, version)
  const copy = prepareCopy(major)
  const env = cleanEnv({
    PATH: `${join(nodeDir, 'bin')}${delimiter}${process.env.PATH ?? ''}`,
    // node-gyp builds native modules against this Node's own headers.
    npm_config_nodedir: nodeDir,
    npm_config_strict_allow_scripts: 'true'
  })
  const step = then === undefined ? ['test'] : ['run', then.script, '--', ...then.args]
  const label = workers === undefined ? `v${version}` : `v${version}, WORKERS=${workers}`
  console.log(`\n=== Node.js ${label}: npm install && npm ${step.join(' ')}, in ${copy}\n`)
  const install = await runEchoed('npm', ['install'], { cwd: copy, env })
  if (install.code !== 0) return { label, ok: false, step: 'npm install', code: install.code }
  const testEnv = { ...env, PETSTORE_TEST_ONCE: 'skip', ...(workers === undefined ? {} : { PETSTORE_TEST_WORKERS: workers }) }
  const test = await runEchoed('npm', step, { cwd: copy, env: testEnv })
  return { label, ok: test.code === 0, step: `npm ${step[0]}`, code: test.code, summary: then === undefined ? test.summary ?? 'no line counting the tests' : undefined, failedTests: test.failedTests }
}

const argv = process.argv.slice(2)
const runAt = argv.indexOf('--run')
const before = runAt === -1 ? argv : argv.slice(0, runAt)
const workersAt = before.indexOf('--workers')
const workers = workersAt === -1 ? undefined : before.splice(workersAt, 2)[1]
if (workers !== undefined && !/^[1-9]\d*$/.test(workers)) fail(USAGE, 2)
const majors = before
const [script, ...args] = runAt === -1 ? [] : argv.slice(runAt + 1)
if (majors.length === 0 || !majors.every((major) => /^\d+$/.test(major)) || (runAt !== -1 && (script === undefined || script.startsWith('-')))) fail(USAGE, 2)
// `npm run test:node -- 24 --run bench -- --only list`: the second `--` reaches this script.
const then = script === undefined ? undefined : { script, args: args[0] === '--' ? args.slice(1) : args }

const results = []
for (const major of majors) results.push(await testOn(major, then, workers))

console.log('\n=== npm run test:node')
for (const { label, ok, step, code, summary, failedTests = [] } of results) {
  const counts = summary === undefined ? '' : ` (${summary})`
  console.log(`Node.js ${label}: ${ok ? 'passed' : `FAILED at ${step} (exit ${code})`}${counts}`)
  for (const line of failedTests) console.log(`  ${line}`)
}
process.exit(results.every((result) => result.ok) ? 0 : 1)
