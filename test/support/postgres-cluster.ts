// A throwaway PostgreSQL cluster: initdb in a fresh folder, the postmaster
// on a free loopback port as a child process, stopped by its PID. `npm test`
// starts one for every test (scripts/services/postgres.js); outage tests
// start their own, to stop or freeze it without disturbing the others.
//
// PostgreSQL refuses to run as root, so as root the cluster belongs to the
// `postgres` user (which Debian's packages create). When initdb is neither
// on PATH nor under /usr/lib/postgresql/*/bin, Debian's package is
// installed first.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { freePort } from './ports.js'
import { PROJECT_ROOT } from './process.js'

const START_TIMEOUT_MS = 30_000
const STOP_GRACE_MS = 10_000

type Log = (message: string) => void
interface ExitStatus { code: number | null, signal: NodeJS.Signals | null }

export class PostgresCluster {
  readonly url: string
  readonly #bin: string
  readonly #dir: string
  readonly #port: number
  readonly #owner: { uid: number, gid: number } | undefined
  #postmaster: ChildProcess | undefined
  #exited: Promise<ExitStatus> = Promise.resolve({ code: 0, signal: null })
  #stderr = ''

  private constructor (bin: string, dir: string, port: number, owner: { uid: number, gid: number } | undefined) {
    this.#bin = bin
    this.#dir = dir
    this.#port = port
    this.#owner = owner
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`
  }

  /** initdb in `dir`, then the server, answering queries when this resolves. */
  static async start ({ dir, log = () => {} }: { dir: string, log?: Log }): Promise<PostgresCluster> {
    const bin = findBinaries() ?? await install(log)
    const owner = process.getuid?.() === 0 ? userIds('postgres') : undefined
    const data = join(dir, 'data')
    mkdirSync(data, { recursive: true })
    if (owner !== undefined) {
      chownSync(dir, owner.uid, owner.gid)
      chownSync(data, owner.uid, owner.gid)
    }
    const initdb = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
      ...(owner ?? {}), env: serverEnv(), encoding: 'utf8'
    })
    if (initdb.status !== 0) throw new Error(`initdb failed (${initdb.status ?? initdb.signal}):\n${initdb.stdout}${initdb.stderr}`)
    const cluster = new PostgresCluster(bin, dir, await freePort(), owner)
    await cluster.resume()
    log(`PostgreSQL (${bin}) on 127.0.0.1:${cluster.#port}, PID ${cluster.pid ?? '?'}`)
    return cluster
  }

  get pid (): number | undefined { return this.#postmaster?.pid }
  /** The postmaster's PID and its children's, as they are now: the backends it starts later are its children too. */
  processes (): number[] {
    const pid = this.#postmaster?.pid
    return pid === undefined ? [] : [pid, ...childrenOf(pid)]
  }

  /** Starts the server again on the same data and port (after stop or crash), and waits until it answers. */
  async resume (): Promise<void> {
    const postmaster = spawn(join(this.#bin, 'postgres'), [
      '-D', join(this.#dir, 'data'), '-p', String(this.#port), '-k', this.#dir,
      '-c', 'listen_addresses=127.0.0.1',
      // Enough for the test files that run at once, each with its pools.
      '-c', 'max_connections=300',
      '-c', 'shared_buffers=32MB'
    ], { ...(this.#owner ?? {}), env: serverEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
    this.#postmaster = postmaster
    this.#stderr = ''
    postmaster.stderr?.setEncoding('utf8').on('data', (chunk: string) => { this.#stderr = (this.#stderr + chunk).slice(-4000) })
    this.#exited = new Promise((resolve) => postmaster.once('exit', (code, signal) => resolve({ code, signal })))
    try {
      await this.#waitUntilReady()
    } catch (error) {
      await this.stop()
      throw error
    }
  }

  /** Sends a signal to the postmaster: SIGQUIT is `pg_ctl stop -m immediate`. */
  signal (signal: NodeJS.Signals): void {
    this.#postmaster?.kill(signal)
  }

  /**
   * Stops every process of the server, as SIGSTOP of a whole host would:
   * connections stay open, nothing answers. The postmaster first, so that
   * it forks no more; then the backends it forked, found by their parent
   * PID (each runs in a session of its own, so no process group holds them).
   */
  freeze (): void {
    const pid = this.#postmaster?.pid
    if (pid === undefined) return
    signalIfAlive(pid, 'SIGSTOP')
    for (const child of childrenOf(pid)) signalIfAlive(child, 'SIGSTOP')
  }

  thaw (): void {
    const pid = this.#postmaster?.pid
    if (pid === undefined) return
    for (const child of childrenOf(pid)) signalIfAlive(child, 'SIGCONT')
    signalIfAlive(pid, 'SIGCONT')
  }

  /** Waits for the postmaster to exit (after SIGQUIT, say). */
  async exited (): Promise<ExitStatus> {
    return await this.#exited
  }

  /** Fast shutdown (SIGINT: sessions ended, data kept), then SIGKILL after a grace. */
  async stop (): Promise<void> {
    const postmaster = this.#postmaster
    if (postmaster === undefined || postmaster.exitCode !== null || postmaster.signalCode !== null) return
    this.thaw()
    postmaster.kill('SIGINT')
    const grace = AbortSignal.timeout(STOP_GRACE_MS)
    await Promise.race([this.#exited, delay(STOP_GRACE_MS, undefined, { signal: grace }).then(() => postmaster.kill('SIGKILL'), () => {})])
  }

  /** Until a query answers: the port opens before the server accepts sessions. */
  async #waitUntilReady (): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS
    let ended: ExitStatus | undefined
    this.#exited.then((status) => { ended = status }, () => {})
    let lastError: unknown
    while (Date.now() < deadline) {
      if (ended !== undefined) throw new Error(`PostgreSQL exited (${ended.code ?? ended.signal}) before accepting sessions:\n${this.#stderr}`)
      const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 1000 })
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
    throw new Error(`PostgreSQL did not answer within ${START_TIMEOUT_MS} ms (${String(lastError)}):\n${this.#stderr}`)
  }
}

/** A process may end between being listed and being signalled: that is not an error. */
function signalIfAlive (pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

/** PIDs whose parent is `parent`, from /proc (Linux). */
function childrenOf (parent: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // Field 4 of /proc/PID/stat, after the command name in parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) children.push(Number(entry))
    } catch {
      // The process ended while the list was read.
    }
  }
  return children
}

function serverEnv (): NodeJS.ProcessEnv {
  return { ...process.env, LC_ALL: 'C', LANG: 'C' }
}

/** The folder holding initdb and postgres: PATH first, then Debian's versioned folders, newest first. */
function findBinaries (): string | undefined {
  const onPath = (process.env.PATH ?? '').split(delimiter).find((folder) =>
    folder !== '' && existsSync(join(folder, 'initdb')) && existsSync(join(folder, 'postgres')))
  if (onPath !== undefined) return onPath
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin')
}

/** scripts/services/apt.js, which the other services install with too. */
interface Apt {
  aptInstall: (args: readonly string[]) => string | undefined
}

async function install (log: Log): Promise<string> {
  log('initdb not found: installing Debian\'s postgresql package (apt-get)')
  // Plain JavaScript outside the compiled tree (dist/ holds no scripts/), so
  // loaded by its path from the project root, from test/ and dist/test/ alike.
  const { aptInstall } = await import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'services', 'apt.js')).href) as Apt
  const failure = aptInstall(['postgresql'])
  if (failure !== undefined) throw new Error(`Debian's postgresql package cannot be installed (${failure}): install PostgreSQL (initdb, postgres) to run the tests`)
  const bin = findBinaries()
  if (bin === undefined) throw new Error('postgresql was installed, but initdb is still not found')
  return bin
}

function userIds (name: string): { uid: number, gid: number } {
  const id = (flag: string): number => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}
