// A throwaway PostgreSQL cluster for one test run: initdb in a fresh
// folder, the postmaster on a free loopback port, stopped by its PID.
// PostgreSQL refuses to run as root, so as root the cluster belongs to the
// `postgres` user (which Debian's packages create). When initdb is neither
// on PATH nor under /usr/lib/postgresql/*/bin, Debian's package is
// installed first.
//
// env: PETSTORE_TEST_POSTGRES_URL, the cluster's `postgres` database as its
// superuser; tests make a database of their own in it.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import pg from 'pg'

const START_TIMEOUT_MS = 30_000
const STOP_GRACE_MS = 10_000

export async function start ({ dir, log }) {
  const bin = findBinaries() ?? install(log)
  const owner = process.getuid?.() === 0 ? userIds('postgres') : undefined
  const data = join(dir, 'data')
  mkdirSync(data, { recursive: true })
  if (owner !== undefined) {
    chownSync(dir, owner.uid, owner.gid)
    chownSync(data, owner.uid, owner.gid)
  }
  const asOwner = owner === undefined ? {} : { uid: owner.uid, gid: owner.gid }
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' }
  const initdb = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], { ...asOwner, env, encoding: 'utf8' })
  if (initdb.status !== 0) throw new Error(`initdb failed (${initdb.status ?? initdb.signal}):\n${initdb.stdout}${initdb.stderr}`)

  const port = await freePort()
  const postmaster = spawn(join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-k', dir,
    '-c', 'listen_addresses=127.0.0.1',
    // Enough for the test files that run at once, each with its pools.
    '-c', 'max_connections=300',
    '-c', 'shared_buffers=32MB'
  ], { ...asOwner, env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  postmaster.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000) })
  const exited = new Promise((resolve) => postmaster.once('exit', (code, signal) => resolve({ code, signal })))

  const stop = async () => {
    if (postmaster.exitCode !== null || postmaster.signalCode !== null) return
    // SIGINT is PostgreSQL's fast shutdown: sessions are ended, data is kept.
    postmaster.kill('SIGINT')
    const timer = delay(STOP_GRACE_MS).then(() => postmaster.kill('SIGKILL'))
    await Promise.race([exited, timer])
  }

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  try {
    await waitUntilReady(url, exited, () => stderr)
  } catch (error) {
    await stop()
    throw error
  }
  log(`PostgreSQL (${bin}) on 127.0.0.1:${port}, PID ${postmaster.pid}`)
  return { env: { PETSTORE_TEST_POSTGRES_URL: url }, stop }
}

/** The folder holding initdb and postgres: PATH first, then Debian's versioned folders, newest first. */
function findBinaries () {
  const onPath = (process.env.PATH ?? '').split(delimiter).find((folder) =>
    folder !== '' && existsSync(join(folder, 'initdb')) && existsSync(join(folder, 'postgres')))
  if (onPath !== undefined) return onPath
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
  return versions.length === 0 ? undefined : join(root, versions[0], 'bin')
}

function install (log) {
  log('initdb not found: installing Debian\'s postgresql package (apt-get)')
  for (const args of [['update'], ['install', '-y', 'postgresql']]) {
    const result = spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
    if (result.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: install PostgreSQL (initdb, postgres) to run the tests`)
  }
  const bin = findBinaries()
  if (bin === undefined) throw new Error('postgresql was installed, but initdb is still not found')
  return bin
}

function userIds (name) {
  const id = (flag) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/** A port the OS says is free now. */
export async function freePort () {
  const server = createServer()
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Until a query answers: the port opens before the server accepts sessions. */
async function waitUntilReady (url, exited, output) {
  const deadline = Date.now() + START_TIMEOUT_MS
  let ended
  exited.then((status) => { ended = status })
  let lastError
  while (Date.now() < deadline) {
    if (ended !== undefined) throw new Error(`PostgreSQL exited (${ended.code ?? ended.signal}) before accepting sessions:\n${output()}`)
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
    try {
      await client.connect()
      await client.query('SELECT 1')
      return
    } catch (error) {
      lastError = error
    } finally {
      await client.end().catch(() => {})
    }
    await delay(100)
  }
  throw new Error(`PostgreSQL did not answer within ${START_TIMEOUT_MS} ms (${lastError}):\n${output()}`)
}
