// The fallback load generator where wrk is not installed: autocannon's
// programmatic API, run as a program of its own so that it can be pinned to
// the generator's core. It prints one Measurement as JSON.
// https://github.com/mcollina/autocannon#api
//
//   node dist/bench/autocannon.js '{"request":…,"seconds":10,"connections":32}'
import autocannon from 'autocannon'
import type { AutocannonJob, Measurement } from './load.js'

async function measure ({ request, seconds, connections }: AutocannonJob): Promise<Measurement> {
  // autocannon records latency in whole milliseconds; on loopback most
  // responses take less than one, so each response's time is kept here.
  const times: number[] = []
  let unexpected = 0
  let unexpectedStatus = 0
  let sent = 0
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({
      url: request.url,
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      ...(request.forwardedFor === true
        ? {
            requests: [{
              setupRequest: (req: autocannon.Request) => {
                sent++
                return { ...req, headers: { ...req.headers, 'x-forwarded-for': `10.0.${Math.floor(sent / 256) % 256}.${sent % 256}` } }
              }
            }]
          }
        : {}),
      connections,
      duration: seconds,
      pipelining: 1
    }, (error: unknown, result) => {
      if (error !== null && error !== undefined) reject(error instanceof Error ? error : new Error(String(error)))
      else resolve(result)
    })
    instance.on('response', (_client, status, _bytes, responseTime) => {
      times.push(responseTime)
      if (status !== request.expect) {
        unexpected++
        unexpectedStatus = status
      }
    })
  })

  times.sort((a, b) => a - b)
  return {
    requestsPerSecond: times.length / result.duration,
    responses: times.length,
    latencyMs: { p50: percentile(times, 0.5), p99: percentile(times, 0.99) },
    unexpected,
    unexpectedStatus,
    errors: result.errors - result.timeouts,
    timeouts: result.timeouts,
    seconds: result.duration
  }
}

/** Nearest-rank percentile of ascending `sorted`; NaN when nothing was measured. */
function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN
}

const job = JSON.parse(process.argv[2] ?? '{}') as AutocannonJob
process.stdout.write(JSON.stringify(await measure(job)) + '\n')
