// A server under load, as an operator runs one: a child process on
// 127.0.0.1, pinned to the server's core, its stdout (the log, one JSON
// line per request for the petstore) appended to a file and its stderr to
// another. Nothing here reads the log while the server is loaded: the port
// comes from the `listening on` line near the file's start, and the file is
// emptied after each run so that a long benchmark does not fill the disk.
// Every server is stopped by its own PID.
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { pinned } from './cpus.js'

const LISTENING = /listening on http:\/\/([^\s"]+):(\d+)/
/** Enough of the log's start to hold the lines written before the listening one. */
const HEAD_BYTES = 64 * 1024
const START_TIMEOUT_MS = 15_000
const STOP_GRACE_MS = 10_000
/** Variables a server inherits: nothing of this shell's configuration (LOG_LEVEL, DATABASE_URL…) leaks into what is measured. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR']

/** /proc counts CPU time in clock ticks: USER_HZ, 100 on every Linux architecture Node.js runs on. */
const CLOCK_TICKS_PER_SECOND = 100

export interface ServerSpec {
  /** Names the log files, and the server in messages. */
  name: string
  /** Node's arguments: the script and its own. */
  args: readonly string[]
  env: Record<string, string>
}

interface Exit { code: number | null, signal: NodeJS.Signals | null }

/** Servers started so far: each logs to files of its own, so no listening line is ever an earlier server's. */
let started = 0

export class BenchServer {
  readonly name: string
  readonly origin: string
  readonly #child: ChildProcess
  readonly #log: string
  readonly #errors: string
  readonly #exited: Promise<Exit>
  #exit: Exit | undefined
  readonly #killOnExit = (): void => { this.#child.kill('SIGKILL') }

  private constructor (name: string, child: ChildProcess, log: string, errors: string, exited: Promise<Exit>, port: number) {
    this.name = name
    this.#child = child
    this.#log = log
    this.#errors = errors
    this.#exited = exited
    this.origin = `http://127.0.0.1:${port}`
    exited.then((exit) => { this.#exit = exit; process.removeListener('exit', this.#killOnExit) }, () => {})
    // If the benchmark itself ends abruptly, its servers do not outlive it.
    process.once('exit', this.#killOnExit)
  }

  /** Starts the server on the given core (undefined: any) and waits for its listening line. */
  static async start ({ name, args, env }: ServerSpec, { dir, cpu }: { dir: string, cpu: number | undefined }): Promise<BenchServer> {
    const slug = `${++started}-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`
    const log = join(dir, `${slug}.log`)
    const errors = join(dir, `${slug}.stderr`)
    // O_APPEND: the server keeps writing at the end after the file is emptied.
    const out = openSync(log, 'a')
    const err = openSync(errors, 'a')
    const inherited = Object.fromEntries(INHERITED.flatMap((n) => process.env[n] === undefined ? [] : [[n, process.env[n]]]))
    const { command, args: argv } = pinned(cpu, process.execPath, args)
    let child: ChildProcess
    try {
      child = spawn(command, argv, { env: { ...inherited, HOST: '127.0.0.1', PORT: '0', ...env }, stdio: ['ignore', out, err] })
    } finally {
      closeSync(out)
      closeSync(err)
    }
    const exited = new Promise<Exit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }))
      child.once('error', () => resolve({ code: null, signal: null }))
    })
    let ended: Exit | undefined
    exited.then((exit) => { ended = exit }, () => {})
    const deadline = Date.now() + START_TIMEOUT_MS
    for (;;) {
      const port = LISTENING.exec(head(log))?.[2]
      if (port !== undefined) return new BenchServer(name, child, log, errors, exited, Number(port))
      if (ended !== undefined || Date.now() > deadline) {
        child.kill('SIGKILL')
        const why = ended === undefined ? `did not listen within ${START_TIMEOUT_MS} ms` : `exited (${ended.code ?? ended.signal ?? '?'})`
        throw new Error(`${name} ${why}:\n${tail(log)}${tail(errors)}`)
      }
      await delay(50)
    }
  }

  get pid (): number | undefined { return this.#child.pid }

  /** Resident memory now, in MiB, from /proc (Linux); undefined elsewhere or once exited. */
  rssMiB (): number | undefined {
    const status = this.#proc('status')
    const kB = status === undefined ? undefined : /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]
    return kB === undefined ? undefined : Number(kB) / 1024
  }

  /**
   * CPU time the server has used so far, user and system, in seconds, from
   * /proc (Linux); undefined elsewhere or once exited. Divided by the
   * requests answered it is the steadiest figure of a run: on a virtual
   * machine whose speed drifts, it moves far less than requests per second.
   */
  cpuSeconds (): number | undefined {
    const stat = this.#proc('stat')
    return stat === undefined ? undefined : cpuSecondsIn(stat)
  }

  /**
   * The CPU seconds each of the server's threads has used so far, by
   * thread id, from /proc (Linux); undefined elsewhere or once exited.
   * How many of them are busy under load tells whether the workers asked
   * for are serving.
   */
  threadCpuSeconds (): Map<string, number> | undefined {
    if (this.pid === undefined || this.#exit !== undefined) return undefined
    const task = `/proc/${this.pid}/task`
    let threads: string[]
    try {
      threads = readdirSync(task)
    } catch {
      return undefined
    }
    // A thread may end between the listing and the read.
    return new Map(threads.flatMap((tid) => {
      try {
        return [[tid, cpuSecondsIn(readFileSync(`${task}/${tid}/stat`, 'utf8'))]]
      } catch {
        return []
      }
    }))
  }

  /** /proc/PID/`file` while the server runs; undefined where there is no /proc. */
  #proc (file: string): string | undefined {
    if (this.pid === undefined || this.#exit !== undefined) return undefined
    try {
      return readFileSync(`/proc/${this.pid}/${file}`, 'utf8')
    } catch {
      return undefined
    }
  }

  /** Bytes of log written since the last `emptyLog`. */
  logBytes (): number {
    return statSync(this.#log).size
  }

  emptyLog (): void {
    truncateSync(this.#log, 0)
  }

  /** Fails with the end of its output when the server has exited. */
  assertRunning (): void {
    if (this.#exit !== undefined) {
      throw new Error(`${this.name} exited (${this.#exit.code ?? this.#exit.signal ?? '?'}):\n${tail(this.#log)}${tail(this.#errors)}`)
    }
  }

  /** SIGTERM, then SIGKILL after a grace; says how it ended when that was not the stop asked for. Never throws. */
  async stop (): Promise<string | undefined> {
    if (this.#exit === undefined) {
      this.#child.kill('SIGTERM')
      const grace = new AbortController()
      const late = await Promise.race([this.#exited.then(() => false), delay(STOP_GRACE_MS, true, { signal: grace.signal }).catch(() => false)])
      grace.abort()
      if (late) this.#child.kill('SIGKILL')
    }
    const exit = await this.#exited
    if (exit.code === 0 || exit.signal === 'SIGTERM' || exit.signal === 'SIGINT') return undefined
    return `${this.name} ended with ${exit.code ?? exit.signal ?? '?'}:\n${tail(this.#errors)}`
  }
}

/** User and system time from a /proc …/stat line, in seconds. */
function cpuSecondsIn (stat: string): number {
  // Fields 14 and 15 (utime, stime), counted after the command name,
  // which is in parentheses and may itself hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
}

function head (file: string): string {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(HEAD_BYTES)
    return buffer.toString('utf8', 0, readSync(fd, buffer, 0, HEAD_BYTES, 0))
  } finally {
    closeSync(fd)
  }
}

/** The last few KB of a file, for a failure message. */
function tail (file: string, bytes = 4096): string {
  const fd = openSync(file, 'r')
  try {
    const size = statSync(file).size
    const buffer = Buffer.alloc(Math.min(bytes, size))
    return buffer.toString('utf8', 0, readSync(fd, buffer, 0, buffer.length, size - buffer.length))
  } finally {
    closeSync(fd)
  }
}
