// A worker's log lines go to the main thread, which alone writes stdout:
// lines written by several threads to one pipe could interleave. Lines are
// sent in one message per turn of the event loop, not one each.
import type { MessagePort } from 'node:worker_threads'
import type { LogSink } from '../telemetry/log.js'
import type { FromWorker } from './messages.js'

/** As stdout's own buffer (log.ts): past this much unsent, lines are dropped and counted. */
const MAX_PENDING_CHARS = 16 * 1024 * 1024

export function relaySink (port: Pick<MessagePort, 'postMessage'>): LogSink {
  let pending: string[] = []
  let pendingChars = 0
  let dropped = 0
  let scheduled = false
  const send = (): void => {
    scheduled = false
    if (pending.length === 0) return
    const message: FromWorker = { kind: 'log', text: pending.join('') }
    pending = []
    pendingChars = 0
    port.postMessage(message)
  }
  return {
    write (line) {
      if (pendingChars + line.length > MAX_PENDING_CHARS) {
        dropped++
        return
      }
      pending.push(line)
      pendingChars += line.length
      if (!scheduled) {
        scheduled = true
        setImmediate(send)
      }
    },
    // The main thread writes what it is sent, and flushes stdout itself once its workers have stopped.
    async flush () { send() },
    dropped: () => dropped
  }
}
