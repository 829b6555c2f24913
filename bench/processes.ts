// The benchmark's child processes: the petstore and the baseline server, and
// the `petstore` command that creates the key. Each is stopped by its own
// PID (child.kill), never by name, and every wait is bounded.
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'

/** The nearest directory above this file that holds bin/petstore.js (works from bench/ and from dist/bench/). */
export const PROJECT_ROOT = findProjectRoot(dirname(fileURLToPath(import.meta.url)))
export const CLI = join(PROJECT_ROOT, 'bin', 'petstore.js')

/** Variables the service reads: a child gets exactly the ones given to it, none of the parent's. */
const SERVICE_VARIABLES = [
  'HOST', 'PORT', 'DATABASE_URL', 'REDIS_URL', 'PETSTORE_ENV', 'PUBLIC_BASE_URL', 'STAGING_BASE_URL',
  'TRUST_PROXY', 'CORS_ORIGINS', 'RATE_LIMIT_BAN_THRESHOLD', 'RATE_LIMIT_BAN_SECONDS', 'LOG_LEVEL'
]

/** Output kept for error messages; a chatty child cannot fill the memory. */
const KEPT_OUTPUT = 64 * 1024
const LISTENING = /listening on http:\/\/([^\s"]+):(\d+)/

function findProjectRoot (start: string): string {
  let dir = start
  for (;;) {
    if (existsSync(join(dir, 'bin', 'petstore.js'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no bin/petstore.js above ${start}`)
    dir = parent
  }
}

function childEnv (env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SERVICE_VARIABLES) delete base[name]
  return { ...base, ...env }
}

export interface ExitStatus {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A long-running child that prints `listening on http://ADDRESS:PORT` once it serves. */
export class ChildServer {
  readonly name: string
  readonly #child: ChildProcessByStdio<null, Readable, Readable>
  readonly #exited: Promise<ExitStatus>
  #output = ''
  #exit: ExitStatus | undefined
  #onOutput: (() => void) | undefined

  constructor (name: string, args: readonly string[], env: Record<string, string>) {
    this.name = name
    this.#child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
    const collect = (chunk: string): void => {
      this.#output = (this.#output + chunk).slice(-KEPT_OUTPUT)
      this.#onOutput?.()
    }
    this.#child.stdout.setEncoding('utf8').on('data', collect)
    this.#child.stderr.setEncoding('utf8').on('data', collect)
    this.#child.once('error', (error) => collect(`\n${error.message}\n`))
    this.#exited = new Promise((resolve) => {
      this.#child.once('close', (code, signal) => {
        this.#exit = { code, signal }
        this.#onOutput?.()
        resolve(this.#exit)
      })
    })
  }

  get pid (): number | undefined { return this.#child.pid }
  get output (): string { return this.#output }

  /** Resolves with the port from the listening line; fails if the child exits first or after `timeoutMs`. */
  async waitForListening (timeoutMs: number): Promise<number> {
    try {
      return await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${this.name} did not print its listening line within ${timeoutMs} ms:\n${this.#output}`)), timeoutMs)
        this.#onOutput = () => {
          const port = LISTENING.exec(this.#output)?.[2]
          if (port !== undefined) {
            clearTimeout(timer)
            resolve(Number(port))
          } else if (this.#exit !== undefined) {
            clearTimeout(timer)
            reject(new Error(`${this.name} exited (${this.#exit.code ?? this.#exit.signal}) before listening:\n${this.#output}`))
          }
        }
        this.#onOutput()
      })
    } finally {
      this.#onOutput = undefined
    }
  }

  /** SIGTERM to this PID, then SIGKILL if it has not exited within `graceMs`. Never throws. */
  async stop (graceMs = 10_000): Promise<ExitStatus> {
    if (this.#exit !== undefined) return this.#exit
    this.#child.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => { timer = setTimeout(resolve, graceMs, undefined) })
    const status = await Promise.race([this.#exited, late])
    clearTimeout(timer)
    if (status !== undefined) return status
    this.#child.kill('SIGKILL')
    return await this.#exited
  }

  /** For a parent that is exiting right now: no waiting is possible. */
  killNow (): void {
    if (this.#exit === undefined) this.#child.kill('SIGKILL')
  }
}

/** Runs `node bin/petstore.js ARGS` and returns its stdout; fails on a non-zero exit or after `timeoutMs`. */
export async function runCli (args: readonly string[], env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  let timer: NodeJS.Timeout | undefined
  try {
    const status = await new Promise<ExitStatus>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`petstore ${args.join(' ')} did not finish within ${timeoutMs} ms`)), timeoutMs)
      child.once('error', reject)
      child.once('close', (code, signal) => resolve({ code, signal }))
    })
    if (status.code !== 0) throw new Error(`petstore ${args.join(' ')} exited with ${status.code ?? status.signal}:\n${stdout}${stderr}`)
    return stdout
  } finally {
    clearTimeout(timer)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
}
