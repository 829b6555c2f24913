// The service's log: pino to stdout, written asynchronously from a bounded
// buffer, so a slow reader costs dropped lines (counted), never slow requests,
// and a reader that goes away ends the logging, not the service. Our own
// sonic-boom, flushed by us with a deadline (docs/INTERNALS.md, section "Log").
import { createRequire } from 'node:module'
import { hostname } from 'node:os'
import pino, { type Logger } from 'pino'
import sonicBoom from 'sonic-boom'

export type LogFormat = 'json' | 'pretty'

export interface LogOptions {
  level: string
  format: LogFormat
  /** In a worker thread (docs/WORKERS.md), which one: every line says it. */
  worker?: number
}

export interface ServiceLog {
  logger: Logger
  /** Writes out what is buffered; resolves when written, or when `deadlineMs` has passed, whichever comes first. */
  flush: (deadlineMs: number) => Promise<void>
  /** Lines lost so far: buffer full (a reader too slow) or the reader gone. */
  dropped: () => number
  /** Writes lines already formatted (a worker's, workers/log-relay.ts) as they are. */
  write: (text: string) => void
}

/** Some 60,000 request lines of about 250 bytes: a stalled reader has seconds to minutes before a line is dropped. */
const BUFFER_BYTES = 16 * 1024 * 1024

/** Where the log's lines go: stdout (below), or, in a worker, the main thread (workers/log-relay.ts). */
export type LogSink = Pick<ServiceLog, 'write' | 'flush' | 'dropped'>

export function createLog ({ level, format, worker }: LogOptions, sink: LogSink = stdoutSink()): ServiceLog {
  const pretty = format === 'pretty'
    // Loaded only when asked for, like the database and Redis clients
    // (docs/PERFORMANCE.md, RSS). Coloured only for a person at a terminal.
    ? loadPrettyFactory()({ colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    : undefined
  const destination = pretty === undefined ? sink : { write (line: string): void { sink.write(pretty(line)) } }
  const logger = pino({
    level,
    ...(worker === undefined ? {} : { base: { pid: process.pid, hostname: hostname(), worker } }),
    // Tokens never reach the log, even if a serializer starts logging headers.
    redact: { paths: ['req.headers.authorization', 'req.headers["idempotency-key"]'], censor: '[redacted]' }
  }, destination)
  return { logger, flush: sink.flush, dropped: sink.dropped, write: sink.write }
}

/**
 * Lines are written once WRITE_BYTES of them wait, and at most about
 * WRITE_EVERY_MS after they came: a write for each line cost a system call
 * and a trip through libuv's thread pool a request, some 12 µs of a
 * getPet's 150 (docs/PERFORMANCE.md: "The log's writes").
 */
const WRITE_BYTES = 8192
const WRITE_EVERY_MS = 100

/** stdout, through a bounded buffer: what does not fit is dropped and counted. */
function stdoutSink (): LogSink {
  const stream = new sonicBoom.SonicBoom({ fd: 1, sync: false, maxLength: BUFFER_BYTES, minLength: WRITE_BYTES })
  let dropped = 0
  let gone = false
  stream.on('drop', () => { dropped++ })
  // EPIPE (the reader closed its end) and any other write error: nothing more
  // can be written there, and the service goes on without its log.
  stream.on('error', () => { gone = true })
  // Not sonic-boom's periodicFlush, which wakes an idle process ten times a
  // second. This one runs while lines come, and once after the last: a flush
  // while a write is in flight does nothing, and the next one writes the rest.
  let flusher: NodeJS.Timeout | undefined
  let written = false
  const flushNow = (): void => {
    if (!gone) stream.flush()
    if (!written) {
      clearInterval(flusher)
      flusher = undefined
    }
    written = false
  }
  return {
    write (line) {
      if (gone) {
        dropped++
        return
      }
      stream.write(line)
      written = true
      if (flusher === undefined) {
        flusher = setInterval(flushNow, WRITE_EVERY_MS)
        flusher.unref()
      }
    },
    async flush (deadlineMs) {
      if (gone) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadlineMs)
        stream.flush(() => { clearTimeout(timer); resolve() })
      })
    },
    dropped: () => dropped
  }
}

/** pino-pretty, loaded synchronously, since the log exists before anything else starts. */
function loadPrettyFactory (): typeof import('pino-pretty').prettyFactory {
  const require = createRequire(import.meta.url)
  return (require('pino-pretty') as typeof import('pino-pretty')).prettyFactory
}
