// One load run: autocannon's programmatic API, in this process, against one
// server. https://github.com/mcollina/autocannon#api
import autocannon from 'autocannon'

export interface LoadRequest {
  /** An absolute http://127.0.0.1:PORT/… URL. */
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
}

export interface LoadOptions {
  seconds: number
  connections: number
  /** Stops the run early (SIGINT); what was measured so far is returned. */
  signal: AbortSignal
}

export interface Measurement {
  /** Mean of autocannon's one-second samples of completed responses. */
  requestsPerSecond: number
  responses: number
  /** From every response's own time, not autocannon's whole-millisecond histogram. */
  latencyMs: { p50: number, p99: number }
  non2xx: number
  errors: number
  timeouts: number
  seconds: number
}

export async function measure (request: LoadRequest, { seconds, connections, signal }: LoadOptions): Promise<Measurement> {
  // autocannon records latency in whole milliseconds; on loopback most
  // responses take less than one, so each response's time is kept here.
  const times: number[] = []
  let stop: (() => void) | undefined
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({
      url: request.url,
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      connections,
      duration: seconds,
      pipelining: 1
    }, (error: unknown, result) => {
      if (error !== null && error !== undefined) reject(error instanceof Error ? error : new Error(String(error)))
      else resolve(result)
    })
    instance.on('response', (_client, _status, _bytes, responseTime) => { times.push(responseTime) })
    stop = () => { instance.stop() }
    signal.addEventListener('abort', stop, { once: true })
  }).finally(() => { if (stop !== undefined) signal.removeEventListener('abort', stop) })

  times.sort((a, b) => a - b)
  return {
    requestsPerSecond: result.requests.average,
    responses: result.requests.total,
    latencyMs: { p50: percentile(times, 0.5), p99: percentile(times, 0.99) },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds: result.duration
  }
}

/** Nearest-rank percentile of ascending `sorted`; NaN when nothing was measured. */
function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN
}
