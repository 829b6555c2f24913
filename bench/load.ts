// One load run against one server, whichever generator sends it: wrk
// (bench/wrk.ts) when it is installed, autocannon (bench/autocannon.ts)
// otherwise. Either runs as a child process pinned to the load generator's
// core, so that the server's core is left to the server.
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pinned } from './cpus.js'

export interface LoadRequest {
  /** An absolute http://127.0.0.1:PORT/… URL. */
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
  /** The status every response must have. */
  expect: number
  /** Each request names a client address of its own in X-Forwarded-For (10.0.0.0/16, in turn). */
  forwardedFor?: boolean
}

interface LoadOptions {
  seconds: number
  connections: number
  /** The core the generator is pinned to; undefined: not pinned. */
  cpu: number | undefined
  /** Stops the run (SIGINT): it then rejects with the signal's reason. */
  signal: AbortSignal
}

export interface Measurement {
  /** Responses ÷ the run's own measured duration. */
  requestsPerSecond: number
  responses: number
  latencyMs: { p50: number, p99: number }
  /** Responses whose status was not the expected one. */
  unexpected: number
  /** One such status, to name in the failure; 0 when there was none. */
  unexpectedStatus: number
  /** Connections that failed to connect, read or write. */
  errors: number
  timeouts: number
  seconds: number
}

export interface LoadGenerator {
  name: 'wrk' | 'autocannon'
  measure: (request: LoadRequest, options: LoadOptions) => Promise<Measurement>
}

/** What bench/autocannon.ts reads from its first argument. */
export interface AutocannonJob {
  request: LoadRequest
  seconds: number
  connections: number
}

const AUTOCANNON = join(dirname(fileURLToPath(import.meta.url)), 'autocannon.js')

/** autocannon in a child process of its own, so that it can be pinned like wrk. */
export function autocannonGenerator (): LoadGenerator {
  return {
    name: 'autocannon',
    async measure (request, { seconds, connections, cpu, signal }) {
      const job: AutocannonJob = { request, seconds, connections }
      const stdout = await runToEnd(pinned(cpu, process.execPath, [AUTOCANNON, JSON.stringify(job)]), signal)
      return JSON.parse(stdout) as Measurement
    }
  }
}

/** Runs a generator to its end; its stdout, or a rejection with its stderr when it fails. */
export async function runToEnd ({ command, args }: { command: string, args: readonly string[] }, signal: AbortSignal): Promise<string> {
  signal.throwIfAborted()
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const kill = (): void => { child.kill('SIGKILL') }
  signal.addEventListener('abort', kill, { once: true })
  try {
    const { code, error } = await new Promise<{ code: number | null, error?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, error }))
      child.once('close', (code) => resolve({ code }))
    })
    signal.throwIfAborted()
    if (error !== undefined || code !== 0) {
      throw new Error(`${command} ${args.join(' ')} failed (${error?.message ?? `exit ${code ?? '?'}`}):\n${stdout.slice(-2000)}${stderr.slice(-2000)}`)
    }
    return stdout
  } finally {
    signal.removeEventListener('abort', kill)
  }
}
