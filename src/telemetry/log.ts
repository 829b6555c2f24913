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

/** Where the log's lines go: stdout (`fileSink(1)`, below), or, in a worker, the main thread (workers/log-relay.ts). */
export type LogSink = Pick<ServiceLog, 'write' | 'flush' | 'dropped'>

export function createLog ({ level, format, worker }: LogOptions, sink: LogSink = fileSink(1)): ServiceLog {
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
 * Lines are handed to the stream once WRITE_BYTES of them wait, and at most
 * about WRITE_EVERY_MS after they came: a write for each line cost a system
 * call and a trip through libuv's thread pool a request, some 12 µs of a
 * getPet's 150 (docs/PERFORMANCE.md: "The log's writes"); one for each 8 KiB
 * still cost some 2 µs a request ("The log line's hand-over").
 */
const WRITE_BYTES = 32 * 1024
const WRITE_EVERY_MS = 100

/** A batch's room: WRITE_BYTES, and the longest line a batch still takes whole. */
const BATCH_BYTES = 2 * WRITE_BYTES

/**
 * A file descriptor, through a bounded buffer: what does not fit is
 * dropped and counted. Each line is encoded into the batch as it comes,
 * while its text is fresh in the cache; sonic-boom gets the batch's bytes.
 * Held as text, in sonic-boom or here, the lines cost a few µs a request
 * more: its text mode measures all it holds again for every line, and a
 * batch of pino's lines joined is one string of many small parts, slow to
 * copy out once they have gone cold (docs/PERFORMANCE.md: "The log line's
 * hand-over").
 */
export function fileSink (fd: number): LogSink {
  const stream = new sonicBoom.SonicBoom({ fd, sync: false, maxLength: BUFFER_BYTES, contentMode: 'buffer' })
  // One batch for the sink's life; each hand-over copies out what it holds,
  // so that no batch's unused room waits in memory for its write.
  const batch = Buffer.allocUnsafe(BATCH_BYTES)
  let used = 0
  let dropped = 0
  let gone = false
  stream.on('drop', (bytes: Buffer) => { dropped += linesIn(bytes) })
  // EPIPE (the reader closed its end) and any other write error: nothing more
  // can be written there, and the service goes on without its log.
  stream.on('error', () => { gone = true })
  // sonic-boom's types know only its text mode's write.
  const send = (bytes: Buffer): void => {
    if (gone) dropped += linesIn(bytes)
    else stream.write(bytes as unknown as string)
  }
  const handOver = (): void => {
    if (used === 0) return
    const bytes = Buffer.from(batch.subarray(0, used))
    used = 0
    send(bytes)
  }
  // Not sonic-boom's periodicFlush, which wakes an idle process ten times a
  // second. This one runs while lines come, and once after the last.
  let flusher: NodeJS.Timeout | undefined
  let written = false
  const flushNow = (): void => {
    handOver()
    if (!written) {
      clearInterval(flusher)
      flusher = undefined
    }
    written = false
  }
  return {
    write (line) {
      if (gone) {
        dropped += linesIn(line)
        return
      }
      // A UTF-16 unit takes at most 3 bytes of UTF-8: room for that much, and the line goes in whole.
      const most = line.length * 3
      if (used + most > BATCH_BYTES) handOver()
      if (most > BATCH_BYTES) send(Buffer.from(line))
      else used += batch.write(line, used)
      if (used >= WRITE_BYTES) handOver()
      written = true
      if (flusher === undefined) {
        flusher = setInterval(flushNow, WRITE_EVERY_MS)
        flusher.unref()
      }
    },
    async flush (deadlineMs) {
      handOver()
      if (gone) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadlineMs)
        stream.flush(() => { clearTimeout(timer); resolve() })
      })
    },
    dropped: () => dropped
  }
}

/** How many lines a text holds: each of ours ends with a newline. */
function linesIn (text: string | Buffer): number {
  let lines = 0
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++
  return Math.max(lines, 1)
}

/** pino-pretty, loaded synchronously, since the log exists before anything else starts. */
function loadPrettyFactory (): typeof import('pino-pretty').prettyFactory {
  const require = createRequire(import.meta.url)
  return (require('pino-pretty') as typeof import('pino-pretty')).prettyFactory
}
