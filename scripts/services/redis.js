// Redis for the tests: one standalone server and one three-node Redis Cluster,
// each node a redis-server child process on loopback ports chosen now, in its
// own folder under `dir`, stopped by its PID. redis-server and redis-cli come
// from Debian's redis-server package, installed with apt-get when missing.
//
// env:
//   PETSTORE_TEST_REDIS_URL      redis://127.0.0.1:PORT
//   PETSTORE_TEST_REDIS_CLUSTER  redis+cluster://127.0.0.1:PORT,127.0.0.1:PORT,127.0.0.1:PORT
// (the forms REDIS_URL takes, docs/CONFIGURATION.md).
import { execFile, spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { promisify } from 'node:util'
// Compiled by `npm run build` before the tests run, as postgres.js's cluster is.
import { freePort } from '../../dist/test/support/ports.js'
import { aptInstall, findOnPath } from './apt.js'

const run = promisify(execFile)

const HOST = '127.0.0.1'
/** A redis-server on a free port prints "Ready to accept connections" within milliseconds; 10 s allows for a loaded machine. */
const READY_TIMEOUT_MS = 10_000
/** The cluster agrees on its slots in about a second; 30 s allows for a loaded machine. */
const CLUSTER_TIMEOUT_MS = 30_000
/** After SIGTERM, redis-server exits at once (no persistence to write); SIGKILL after this. */
const STOP_GRACE_MS = 3_000

export async function start ({ dir, log }) {
  ensureInstalled(log)
  const servers = []
  const stop = async () => { await Promise.allSettled(servers.map(stopServer)) }
  try {
    const single = await startServer(join(dir, 'single'), [], servers)
    const nodes = []
    for (let i = 0; i < 3; i++) {
      // The bus port is chosen too: by default it is PORT + 10000, which may be taken, or past 65535.
      nodes.push(await startServer(join(dir, `cluster-${i}`), (busPort) => [
        '--cluster-enabled', 'yes',
        '--cluster-config-file', 'nodes.conf',
        '--cluster-port', String(busPort),
        '--cluster-node-timeout', '2000'
      ], servers))
    }
    await createCluster(nodes.map((node) => node.port))
    log(`standalone on ${single.port} (pid ${single.child.pid}); cluster on ${nodes.map((n) => `${n.port} (pid ${n.child.pid})`).join(', ')}`)
    return {
      env: {
        PETSTORE_TEST_REDIS_URL: `redis://${HOST}:${single.port}`,
        PETSTORE_TEST_REDIS_CLUSTER: `redis+cluster://${nodes.map((node) => `${HOST}:${node.port}`).join(',')}`
      },
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/** Debian's redis-server package brings redis-tools (redis-cli) with it. */
function ensureInstalled (log) {
  const onPath = () => findOnPath('redis-server') !== undefined && findOnPath('redis-cli') !== undefined
  if (onPath()) return
  log('redis-server or redis-cli is not on PATH: installing Debian\'s redis-server package with apt-get')
  const failure = aptInstall(['redis-server'])
  if (failure !== undefined) throw new Error(`${failure}: install redis-server yourself, or run npm test as root on Debian`)
  if (!onPath()) throw new Error('apt-get installed redis-server, yet redis-server or redis-cli is still not on PATH')
  log('installed redis-server with apt-get')
}

/**
 * Starts redis-server in `dir` on a free port, with no persistence (nothing
 * here outlives the run) and in the foreground, so that its PID is the
 * child's and stopping it is a signal to that PID.
 */
async function startServer (dir, extraArgs, servers) {
  mkdirSync(dir, { recursive: true })
  let lastError
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const extra = typeof extraArgs === 'function' ? extraArgs(await freePort()) : extraArgs
    const child = spawn('redis-server', [
      '--bind', HOST, '--port', String(port), '--dir', dir,
      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '',
      ...extra
    ], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    const server = { port, child, exited: new Promise((resolve) => { child.once('exit', resolve); child.once('error', resolve) }) }
    servers.push(server)
    try {
      await ready(server)
      return server
    } catch (error) {
      lastError = error
      await stopServer(server)
    }
  }
  throw lastError
}

/** Resolves on "Ready to accept connections"; rejects if the server exits first (a port taken meanwhile) or takes too long. */
async function ready ({ port, child, exited }) {
  let output = ''
  const seen = new Promise((resolve) => {
    const read = (chunk) => {
      output += chunk
      if (output.includes('Ready to accept connections')) resolve()
    }
    child.stdout.setEncoding('utf8').on('data', read)
    child.stderr.setEncoding('utf8').on('data', read)
  })
  const timer = new AbortController()
  try {
    await Promise.race([
      seen,
      exited.then((code) => { throw new Error(`redis-server on port ${port} exited (${code}) before it was ready:\n${output.slice(-2000)}`) }),
      delay(READY_TIMEOUT_MS, undefined, { signal: timer.signal }).then(() => { throw new Error(`redis-server on port ${port} not ready within ${READY_TIMEOUT_MS} ms:\n${output.slice(-2000)}`) })
    ])
  } finally {
    timer.abort()
  }
  // Keep draining its output, so that a full pipe never blocks it.
  child.stdout.resume()
  child.stderr.resume()
}

async function createCluster (ports) {
  await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes'])
  // `create` returns once the slots are assigned; every node must also see the others and all slots covered.
  const deadline = Date.now() + CLUSTER_TIMEOUT_MS
  for (;;) {
    const infos = await Promise.all(ports.map(async (port) =>
      (await run('redis-cli', ['-h', HOST, '-p', String(port), 'cluster', 'info'])).stdout))
    if (infos.every((info) => /cluster_state:ok/.test(info) && /cluster_known_nodes:3\b/.test(info))) return
    if (Date.now() > deadline) throw new Error(`the Redis cluster on ports ${ports.join(', ')} did not reach cluster_state:ok within ${CLUSTER_TIMEOUT_MS} ms:\n${infos.join('\n')}`)
    await delay(100)
  }
}

async function stopServer ({ child, exited }) {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const timer = new AbortController()
  const late = await Promise.race([
    exited.then(() => false),
    delay(STOP_GRACE_MS, true, { signal: timer.signal }).catch(() => false)
  ])
  timer.abort()
  if (late) {
    child.kill('SIGKILL')
    await exited
  }
}
