// Redis for the tests. `npm test` starts a standalone server and a
// three-node cluster (scripts/services/redis.js) and names them in
// PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_CLUSTER. Fault tests, which
// freeze or kill a server, start one of their own here, so that the shared
// ones stay up for every other test.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { Cluster, Redis } from 'ioredis'
import { RedisStore, type RedisStoreOptions } from '../../src/limits/redis-store.js'
import { parseRedisUrl } from '../../src/limits/redis-url.js'
import { freePort } from './ports.js'
import { withTimeout } from './process.js'

export type RedisKind = 'single' | 'cluster'

const VARIABLES: Record<RedisKind, string> = {
  single: 'PETSTORE_TEST_REDIS_URL',
  cluster: 'PETSTORE_TEST_REDIS_CLUSTER'
}

/** The REDIS_URL of the shared test server or cluster; fails, never skips, when the tests were not started by npm test. */
export function testRedisUrl (kind: RedisKind): string {
  const name = VARIABLES[kind]
  const value = process.env[name]
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run the tests with npm test, which starts Redis`)
  }
  return value
}

/** How long a test's Redis store waits for an answer: long enough that only a Redis that is down fails it. */
const TEST_COMMAND_TIMEOUT_MS = 5_000

/** A RedisStore on the shared test server or cluster, connected. */
export async function openTestStore (kind: RedisKind, options: RedisStoreOptions = {}): Promise<RedisStore> {
  const url = testRedisUrl(kind)
  // The service's 500 ms has a fallback behind it (ResilientStore) that a
  // store made here has not: in one run on a test machine loaded with other
  // files, a command of one file timed out and a fuzzed request of another
  // got a 500. test/limits/resilient-store.test.ts holds the 500 ms to its
  // fallback with a store of its own.
  const store = new RedisStore(parseRedisUrl(url), { commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })
  if (!await store.whenReady(5000)) {
    await store.close()
    throw new Error(`no connection to Redis at ${url} within 5 s`)
  }
  return store
}

/** A plain client on the shared test server or cluster, to look at what the store wrote. */
export async function openTestClient (kind: RedisKind): Promise<Redis | Cluster> {
  const target = parseRedisUrl(testRedisUrl(kind))
  const client = target.kind === 'single' ? new Redis(target.url) : new Cluster(target.nodes)
  await withTimeout(new Promise((resolve) => client.once('ready', resolve)), 5000, 'a Redis client to connect')
  return client
}

/** The servers behind a client: itself, or every master of a cluster. */
function servers (client: Redis | Cluster): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client]
}

/** Every key on the servers behind `client` whose name matches `pattern`. */
export async function keysMatching (client: Redis | Cluster, pattern: string): Promise<Array<{ key: string, server: Redis }>> {
  const found: Array<{ key: string, server: Redis }> = []
  for (const server of servers(client)) {
    let cursor = '0'
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      for (const key of keys) found.push({ key, server })
    } while (cursor !== '0')
  }
  return found
}

/** Redis's clock, in Unix ms. */
export async function redisTime (client: Redis | Cluster): Promise<number> {
  const [seconds, micros] = await (servers(client)[0] ?? client).time()
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

/**
 * Waits, if need be, until the clock `now` reads is at least `marginMs` from
 * the end of a UTC minute, so that the requests a test sends next fall in one
 * minute of a store that decides on the real clock, as the Redis store does.
 */
export async function awayFromMinuteEdge (marginMs: number, now: () => number | Promise<number> = Date.now): Promise<void> {
  const left = 60_000 - (await now()) % 60_000
  if (left < marginMs) await delay(left + 100)
}

/** A redis-server of a test's own, on a port chosen now (or the one given, to restart it where it was). */
export class OwnRedisServer {
  readonly #dir: string
  #child: ChildProcess | undefined
  #exited: Promise<unknown> = Promise.resolve()

  private constructor (readonly port: number, dir: string) {
    this.#dir = dir
  }

  /** Needs redis-server on the PATH: `npm test` installs it when missing (scripts/services/redis.js). */
  static async start (): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'petstore-redis-')))
    await server.restart()
    return server
  }

  get url (): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** The server's PID while it runs. */
  get pid (): number | undefined {
    return this.#child?.pid
  }

  /** Starts it (again) on its port. */
  async restart (): Promise<void> {
    const child = spawn('redis-server', [
      '--bind', '127.0.0.1', '--port', String(this.port), '--dir', this.#dir,
      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', ''
    ], { stdio: ['ignore', 'pipe', 'inherit'] })
    this.#child = child
    this.#exited = new Promise((resolve) => { child.once('exit', resolve); child.once('error', resolve) })
    let output = ''
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk
        if (output.includes('Ready to accept connections')) resolve()
      })
      this.#exited.then(() => reject(new Error(`redis-server on port ${this.port} exited before it was ready:\n${output}`)), reject)
    })
    await withTimeout(ready, 10_000, `redis-server on port ${this.port}`)
  }

  /** SIGSTOP: the server keeps its connections but answers nothing, as a hung one would. */
  freeze (): void {
    this.#signal('SIGSTOP')
  }

  thaw (): void {
    this.#signal('SIGCONT')
  }

  /** SIGKILL: gone at once, its connections closed by the kernel. */
  async kill (): Promise<void> {
    this.#signal('SIGKILL')
    await this.#exited
  }

  async stop (): Promise<void> {
    const child = this.#child
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      this.#signal('SIGCONT')
      this.#signal('SIGTERM')
      const grace = new AbortController()
      const gone = await Promise.race([this.#exited.then(() => true), delay(3000, false, { signal: grace.signal })])
      grace.abort()
      if (!gone) await this.kill()
    }
    rmSync(this.#dir, { recursive: true, force: true })
  }

  #signal (signal: NodeJS.Signals): void {
    const pid = this.#child?.pid
    if (pid === undefined) throw new Error('the server was never started')
    process.kill(pid, signal)
  }
}
