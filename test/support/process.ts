// Shared arrangements for end-to-end tests and the benchmark: the real
// `petstore` command run as a child process (the server, and the CLI), raw
// HTTP over a socket, and small factories. Every wait is bounded, and every child is stopped by its
// own PID (child.kill), never by name.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { testLogFile } from './test-logs.js'

/** The project root: the nearest directory above this file that holds bin/petstore.js (works from test/ and from dist/test/). */
export const PROJECT_ROOT = findProjectRoot(dirname(fileURLToPath(import.meta.url)))
export const CLI = join(PROJECT_ROOT, 'bin', 'petstore.js')
/** The node options `npm start` gives the service (docs/OPERATING.md, "Memory"): the benchmark runs it as users do. */
export const START_FLAGS = startFlags()

/** Variables the service reads: the parent's values must not leak into a child, which gets exactly what a test gives it. */
export const SERVICE_VARIABLES = [
  'HOST', 'PORT', 'DATABASE_URL', 'REDIS_URL', 'PETSTORE_ENV', 'PUBLIC_BASE_URL', 'STAGING_BASE_URL',
  'TRUST_PROXY', 'CORS_ORIGINS', 'RATE_LIMIT_BAN_THRESHOLD', 'RATE_LIMIT_BAN_SECONDS', 'LOG_LEVEL',
  'LOG_FORMAT', 'ADMIN_PORT', 'ADMIN_HOST', 'ADMIN_TOKEN', 'USAGE_FLUSH_MS', 'DATABASE_POOL_SIZE', 'WORKERS',
  'SHED', 'SHED_EVENT_LOOP_DELAY_MS', 'SHED_DB_POOL_WAIT_MS',
  // Tracing's, OpenTelemetry's standard ones.
  'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_SDK_DISABLED', 'OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_BSP_EXPORT_TIMEOUT', 'OTEL_BSP_MAX_QUEUE_SIZE', 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  'OTEL_FASTIFY_IGNORE_PATHS',
  // Set by `node --test` for its own children; the service is not a test file.
  'NODE_TEST_CONTEXT'
]

function findProjectRoot (start: string): string {
  let dir = start
  for (;;) {
    if (existsSync(join(dir, 'bin', 'petstore.js'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no bin/petstore.js above ${start}`)
    dir = parent
  }
}

/**
 * PETSTORE_TEST_WORKERS=N runs every service a test starts with WORKERS=N,
 * unless the test sets WORKERS itself: whatever holds with one worker must
 * hold with several (docs/WORKERS.md).
 */
function testWorkers (): Record<string, string> {
  const workers = process.env.PETSTORE_TEST_WORKERS
  return workers === undefined || workers === '' ? {} : { WORKERS: workers }
}

function childEnv (env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SERVICE_VARIABLES) delete base[name]
  return { ...base, ...env }
}

/** Rejects with a message naming what was awaited when `promise` takes longer than `ms`. */
export async function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  const timer = new AbortController()
  const timeout = delay(ms, undefined, { signal: timer.signal }).then((): never => {
    throw new Error(`timed out after ${ms} ms waiting for ${what}`)
  })
  try {
    // Promise.race handles the timer's rejection once it is aborted.
    return await Promise.race([promise, timeout])
  } finally {
    timer.abort()
  }
}

/** Polls `probe` until it returns a value other than undefined, for at most `ms`. */
export async function pollUntil<T> (probe: () => Promise<T | undefined>, { ms, every, what }: { ms: number, every: number, what: string }): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() >= deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await delay(every)
  }
}

// ---------------------------------------------------------------------------
// Temporary directories

export function makeTempDir (): string {
  return mkdtempSync(join(tmpdir(), 'petstore-e2e-'))
}

export function removeTempDir (dir: string | undefined): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
}

/** The SQLite file of the tests' database in `dir`. */
export function databaseFile (dir: string): string {
  return join(dir, 'p.db')
}

/** A fresh SQLite database in `dir`, as DATABASE_URL. */
export function sqliteUrl (dir: string): string {
  return `sqlite:${databaseFile(dir)}`
}

// ---------------------------------------------------------------------------
// The CLI

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * Runs `node bin/petstore.js ARGS` from the project root, with `input` on its
 * standard input (default: none, ended at once); a run that takes longer
 * than `timeoutMs` is killed and fails.
 */
export async function runCli (args: readonly string[], env: Record<string, string>, timeoutMs = 15_000, input = ''): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: PROJECT_ROOT, env: childEnv(env) })
  // A command that never reads its input may end before the write: that is no failure.
  child.stdin.on('error', () => {})
  child.stdin.end(input)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const closed = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  try {
    return await withTimeout(closed, timeoutMs, `petstore ${args.join(' ')}`)
  } catch (error) {
    child.kill('SIGKILL')
    throw error
  }
}

/** Starts `node bin/petstore.js ARGS` from the project root and gives the child, for a test that handles its streams itself; the caller stops it. */
export function spawnCli (args: readonly string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [CLI, ...args], { cwd: PROJECT_ROOT, env: childEnv(env) })
}

/** Runs the CLI and fails with its output unless it exits with code 0. */
export async function runCliOk (args: readonly string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  const result = await runCli(args, env, undefined, input)
  if (result.code !== 0) {
    throw new Error(`petstore ${args.join(' ')} exited with ${result.code ?? result.signal}:\n${result.stdout}${result.stderr}`)
  }
  return result
}

export interface CreatedKey {
  id: number
  name: string
  plan: string
  token: string
}

/**
 * `petstore keys create … --json`, parsed: the program main.ts runs, in
 * this process (test/support/cli-here.ts, loaded on first use), a Node.js
 * start saved for each key a test or the benchmark makes.
 */
export async function createKey (env: Record<string, string>, options: readonly string[]): Promise<CreatedKey> {
  const { runHereOk } = await import('./cli-here.js')
  const { stdout } = await runHereOk(['keys', 'create', ...options, '--json'], env)
  const key: unknown = JSON.parse(stdout)
  if (!isCreatedKey(key)) throw new Error(`keys create --json printed an unexpected object: ${stdout}`)
  return key
}

function isCreatedKey (value: unknown): value is CreatedKey {
  if (typeof value !== 'object' || value === null) return false
  const record = value as Record<string, unknown>
  return typeof record.id === 'number' && typeof record.name === 'string' &&
    typeof record.plan === 'string' && typeof record.token === 'string'
}

// ---------------------------------------------------------------------------
// The server

export interface ExitStatus {
  code: number | null
  signal: NodeJS.Signals | null
}

const LISTENING = /listening on http:\/\/([^\s"]+):(\d+)/

/** Servers this process has started: each keeps its log in files of its own. */
let serversStarted = 0

function keeper (file: string | undefined): (chunk: string) => void {
  return file === undefined ? () => {} : (chunk) => { appendFileSync(file, chunk) }
}

export class ServerProcess {
  readonly child: ChildProcessWithoutNullStreams
  #stdout = ''
  #stderr = ''
  #exit: ExitStatus | undefined
  readonly #closed: Promise<ExitStatus>
  readonly #listeners = new Set<() => void>()
  readonly #killOnExit = (): void => { this.child.kill('SIGKILL') }
  #port: number | undefined

  /**
   * `args`: the script and its arguments; any server that prints the same listening line.
   * SHED=log unless the test sets it: the tests' own load can overload the
   * machine they share, and a request shed then would be a refusal that no
   * test counts on (regression: a 503 overloaded among the crash test's
   * answers). Shedding is tested with a load the test sets (test/plugins/shed.test.ts).
   */
  constructor (env: Record<string, string>, args: readonly string[] = [CLI, 'serve']) {
    this.child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, env: childEnv({ ...testWorkers(), SHED: 'log', ...env }) })
    // If the test process itself ends abruptly, its server does not outlive it.
    process.once('exit', this.#killOnExit)
    // Kept as it comes, synchronously, one file per stream so that lines never
    // interleave: a test that fails or times out still leaves its server's whole log to scan.
    const server = ++serversStarted
    const keepStdout = keeper(testLogFile(`server-${server}.stdout`))
    const keepStderr = keeper(testLogFile(`server-${server}.stderr`))
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => { this.#stdout += chunk; keepStdout(chunk); this.#notify() })
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => { this.#stderr += chunk; keepStderr(chunk); this.#notify() })
    // 'close', not 'exit': by then every byte the process wrote has been read.
    this.#closed = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        this.#exit = { code, signal }
        process.removeListener('exit', this.#killOnExit)
        this.#notify()
        resolve(this.#exit)
      })
    })
  }

  get pid (): number | undefined { return this.child.pid }
  get stdout (): string { return this.#stdout }
  get stderr (): string { return this.#stderr }
  get exited (): ExitStatus | undefined { return this.#exit }

  /** The real port, read from the `listening on http://ADDRESS:PORT` line. */
  get port (): number {
    if (this.#port === undefined) throw new Error('the server has not printed its listening line yet')
    return this.#port
  }

  /** http://127.0.0.1:PORT, without the /v1 segment. */
  get origin (): string { return `http://127.0.0.1:${this.port}` }

  #notify (): void {
    for (const listener of this.#listeners) listener()
  }

  /** Waits until `predicate` holds for stdout; fails when the process exits first or after `timeoutMs`. */
  async waitForStdout (predicate: (stdout: string) => boolean, timeoutMs: number, what: string): Promise<void> {
    let listener: (() => void) | undefined
    const met = new Promise<void>((resolve, reject) => {
      listener = () => {
        if (predicate(this.#stdout)) resolve()
        else if (this.#exit !== undefined) {
          reject(new Error(`the server exited (${this.#exit.code ?? this.#exit.signal}) before ${what}:\n${this.#stdout}${this.#stderr}`))
        }
      }
      this.#listeners.add(listener)
      listener()
    })
    try {
      await withTimeout(met, timeoutMs, `${what}; output so far:\n${this.#stdout}${this.#stderr}`)
    } finally {
      if (listener !== undefined) this.#listeners.delete(listener)
    }
  }

  async waitForListening (timeoutMs: number): Promise<number> {
    await this.waitForStdout((stdout) => LISTENING.test(stdout), timeoutMs, 'the listening line')
    this.#port = Number(LISTENING.exec(this.#stdout)?.[2])
    return this.#port
  }

  /** Sends a signal to this child's PID. */
  signal (signal: NodeJS.Signals): void {
    if (this.#exit === undefined) this.child.kill(signal)
  }

  async waitForExit (timeoutMs: number): Promise<ExitStatus> {
    return await withTimeout(this.#closed, timeoutMs, `server process ${this.pid ?? '?'} to exit`)
  }

  /** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. Never throws. */
  async stop (graceMs = 10_000): Promise<ExitStatus | undefined> {
    this.signal('SIGTERM')
    try {
      return await this.waitForExit(graceMs)
    } catch {
      await this.dispose()
      return this.#exit
    }
  }

  /** For `after` hooks: ends the process however it stands, never throws, never hangs. */
  async dispose (): Promise<void> {
    if (this.#exit !== undefined) return
    this.child.kill('SIGKILL')
    await this.waitForExit(5_000).catch(() => undefined)
  }
}

/**
 * Starts `count` servers at once. If one fails to start, the others are ended
 * before the error is thrown: an `after` hook never sees them, and a server
 * left running keeps its test file, and the whole run, from ever ending.
 */
export async function startServers (count: number, env: Record<string, string>, timeoutMs?: number): Promise<ServerProcess[]> {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, async () => await startServer(env, timeoutMs)))
  const started = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
  const failed = outcomes.find((outcome) => outcome.status === 'rejected')
  if (failed === undefined) return started
  await Promise.all(started.map(async (server) => await server.dispose()))
  throw failed.reason
}

/** Starts `petstore serve` (or `args`) on 127.0.0.1 with PORT=0 and waits for its listening line. */
export async function startServer (env: Record<string, string>, timeoutMs = 30_000, args?: readonly string[]): Promise<ServerProcess> {
  const server = new ServerProcess({ HOST: '127.0.0.1', PORT: '0', ...env }, args)
  try {
    await server.waitForListening(timeoutMs)
    return server
  } catch (error) {
    await server.dispose()
    throw error
  }
}

// ---------------------------------------------------------------------------
// HTTP

export interface RawResponse {
  status: number
  headers: Map<string, string>
  body: string
}

/** Splits a raw HTTP/1.1 response (headers, then a body of Content-Length bytes or up to the close). */
export function parseRawResponse (text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  if (end === -1) throw new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 200))}`)
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n')
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
  if (match === null) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`)
  const headers = new Map<string, string>()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
  }
  return { status: Number(match[1]), headers, body: text.slice(end + 4) }
}

/** True once `text` holds a whole response with a Content-Length body. */
export function isCompleteResponse (text: string): boolean {
  const end = text.indexOf('\r\n\r\n')
  if (end === -1) return false
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end + 2))?.[1]
  return length !== undefined && Buffer.byteLength(text.slice(end + 4)) >= Number(length)
}

/** A TCP connection for requests no HTTP client would send; it collects everything the server answers. */
export class RawConnection {
  readonly socket: Socket
  #received = ''
  #ended = false
  #error: Error | undefined
  readonly #listeners = new Set<() => void>()

  private constructor (socket: Socket) {
    this.socket = socket
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { this.#received += chunk; this.#notify() })
    socket.on('close', () => { this.#ended = true; this.#notify() })
    // A server may answer and close before reading all that was sent (431): what it answered still counts.
    socket.on('error', (error) => { this.#error = error; this.#notify() })
  }

  static async open (port: number, timeoutMs = 5_000): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1')
    const connected = new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    try {
      await withTimeout(connected, timeoutMs, `a connection to 127.0.0.1:${port}`)
    } catch (error) {
      socket.destroy()
      throw error
    }
    return new RawConnection(socket)
  }

  get received (): string { return this.#received }
  get ended (): boolean { return this.#ended }

  write (text: string): void {
    this.socket.write(text)
  }

  #notify (): void {
    for (const listener of this.#listeners) listener()
  }

  /** Waits until `predicate(received, ended)` holds, for at most `timeoutMs`. */
  async waitFor (predicate: (received: string, ended: boolean) => boolean, timeoutMs: number, what: string): Promise<string> {
    let listener: (() => void) | undefined
    const met = new Promise<string>((resolve, reject) => {
      listener = () => {
        if (predicate(this.#received, this.#ended)) resolve(this.#received)
        else if (this.#ended) reject(this.#error ?? new Error(`the connection closed before ${what}; received ${JSON.stringify(this.#received)}`))
      }
      this.#listeners.add(listener)
      listener()
    })
    try {
      return await withTimeout(met, timeoutMs, what)
    } finally {
      if (listener !== undefined) this.#listeners.delete(listener)
    }
  }

  close (): void {
    this.socket.destroy()
  }
}

/** Sends `text` as is and reads the answer until the server closes the connection (or sends a whole response). */
export async function rawRequest (port: number, text: string, timeoutMs = 5_000): Promise<RawResponse> {
  const connection = await RawConnection.open(port, timeoutMs)
  try {
    connection.write(text)
    const received = await connection.waitFor((received, ended) => ended || isCompleteResponse(received), timeoutMs, 'a raw HTTP response')
    return parseRawResponse(received)
  } finally {
    connection.close()
  }
}

/** The Error body (docs/API.md: Errors), checked field by field. */
export interface ErrorBody {
  code: string
  message: string
  status: number
}

export function parseErrorBody (text: string): ErrorBody {
  const value: unknown = JSON.parse(text)
  if (typeof value !== 'object' || value === null) throw new Error(`not an Error body: ${text}`)
  const { code, message, status } = value as Record<string, unknown>
  if (typeof code !== 'string' || typeof message !== 'string' || typeof status !== 'number') {
    throw new Error(`not an Error body (code, message, status): ${text}`)
  }
  return { code, message, status }
}

/** The target of the first `Link` entry with relation `rel`. */
export function linkTarget (link: string | null | undefined, rel: string): string | undefined {
  if (link === null || link === undefined) return undefined
  for (const part of link.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part)
    if (match?.[2] !== undefined && new RegExp(`;\\s*rel="?${rel}"?(;|\\s|$)`).test(match[2])) return match[1]
  }
  return undefined
}

/** Every `"id":N` of a JSON text, as the exact digit strings (never through a double). */
export function idsIn (text: string): string[] {
  return [...text.matchAll(/"id":(\d+)/g)].map((match) => match[1] as string)
}

/** package.json's `start` script: what `npm start` runs. */
export function startScript (): string {
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? ''
}

/** The node options package.json's `start` script puts before the caller's NODE_OPTIONS, which come after and so win. */
export function startFlags (script = startScript()): string[] {
  const flags = /^NODE_OPTIONS="((?:--\S+ )*)\$NODE_OPTIONS" exec node bin\/petstore\.js serve$/.exec(script)?.[1]
  if (flags === undefined) throw new Error(`package.json's start script is not 'NODE_OPTIONS="[FLAGS ]$NODE_OPTIONS" exec node bin/petstore.js serve': ${script}`)
  return flags.split(' ').filter((flag) => flag !== '')
}
