// The webhook rows (docs/PERFORMANCE.md, "Webhooks"): a petstore with one
// enabled endpoint subscribed to `pet.created`, delivering to the
// benchmark's own receiver (bench/webhook-receiver.ts). Each row counts the
// server's CPU time until every event its creates wrote has reached the
// receiver, so that the delivery work is in its figure. The events are
// known by their pets' ids: the seeded animals wrote none, and every pet
// made after them is made by the benchmark, one id after another
// (AUTOINCREMENT), so "every event up to pet N" is a range of ids.
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import type { LoadRequest, Measurement } from './load.js'
import type { WebhookReceiver } from './webhook-receiver.js'

/** After the last arrival, the dispatcher's next turn (at most 200 ms on) writes the last outcomes: counted too. */
const SETTLE_MS = 250
const DRAIN_TIMEOUT_MS = 120_000
/** The throughput row writes events this long while the receiver holds its deliveries: well within an attempt's 10 s timeout. */
const BACKLOG_SECONDS = 2
/** The lag row's steady rate of creates: moderate, a tenth or less of what one core makes. */
export const LAG_RATE = 200

/** What a row measured its own way is given. */
export interface MeasureContext {
  /** The scenario's request (a durable create), already answered once. */
  request: LoadRequest
  /** The server's CPU seconds so far, user and system; undefined where /proc is not. */
  cpuSeconds: () => number | undefined
  /** One run of the load generator against the server, as every other row is loaded. */
  load: (request: LoadRequest, seconds: number) => Promise<Measurement>
  seconds: number
  warmupSeconds: number
  signal: AbortSignal
  log: (message: string) => void
}

/** Its measurement, and the server's CPU time it counted with what that is divided by. */
export interface Measured {
  measurement: Measurement
  cpuSeconds: number | undefined
  per: number
}

/** The three rows' measures, sharing one server, its receiver and what has been delivered so far. */
export function webhookRows (receiver: () => Promise<WebhookReceiver>, seeded: number): Record<'create' | 'throughput' | 'lag', (context: MeasureContext) => Promise<Measured>> {
  /** Every event of a pet up to this id has arrived. */
  let through = seeded

  /** Makes one more pet and waits for every event up to its own; its id. */
  const drain = async (context: MeasureContext): Promise<{ id: number, last: number }> => {
    const id = await createOne(context.request, context.signal)
    const last = await (await receiver()).waitFor(through, id, DRAIN_TIMEOUT_MS, context.signal)
    through = id
    return { id, last }
  }
  const cpuBetween = (before: number | undefined, after: number | undefined): number | undefined =>
    before === undefined || after === undefined ? undefined : after - before

  return {
    /**
     * The load generator's durable creates, as the create row: CPU from the
     * load's start until every event of the load (and of one create after it,
     * which tells where the load's pets end) has been delivered and its
     * outcome written, ÷ those creates.
     */
    create: async (context) => {
      await context.load(context.request, context.warmupSeconds)
      await drain(context)
      const from = through
      const before = context.cpuSeconds()
      const measurement = await context.load(context.request, context.seconds)
      const ended = performance.now()
      const { id, last } = await drain(context)
      await delay(SETTLE_MS)
      const cpu = cpuBetween(before, context.cpuSeconds())
      context.log(`${id - from} events delivered; the last ${((last - ended) / 1000).toFixed(2)} s after the load ended`)
      return { measurement, cpuSeconds: cpu, per: id - from }
    },
    /**
     * Events written while the receiver holds its deliveries, then released:
     * deliveries a second from the release until the last arrives; CPU per
     * event delivered over the same time (and the settle after it).
     */
    throughput: async (context) => {
      await drain(context)
      const from = through
      const held = await receiver()
      held.stall()
      let written: Measurement
      let upTo: number
      try {
        written = await context.load(context.request, BACKLOG_SECONDS)
        upTo = await createOne(context.request, context.signal)
      } finally {
        held.release()
      }
      const before = context.cpuSeconds()
      const released = performance.now()
      const last = await held.waitFor(from, upTo, DRAIN_TIMEOUT_MS, context.signal)
      through = upTo
      await delay(SETTLE_MS)
      const cpu = cpuBetween(before, context.cpuSeconds())
      const events = upTo - from
      const seconds = (last - released) / 1000
      context.log(`${events} events written in ${BACKLOG_SECONDS} s while the receiver held its deliveries; all delivered ${seconds.toFixed(2)} s after it let them go`)
      return {
        measurement: {
          ...written,
          requestsPerSecond: events / seconds,
          responses: events,
          latencyMs: { p50: Number.NaN, p99: Number.NaN },
          seconds
        },
        cpuSeconds: cpu,
        per: events
      }
    },
    /**
     * LAG_RATE creates a second, each sent at its time whatever the others'
     * answers (an open loop), for the row's duration: each event's lag is
     * from its 201 reaching the benchmark to its delivery reaching the
     * receiver, both read on this process's clock. CPU until the last is
     * delivered, ÷ the creates.
     */
    lag: async (context) => {
      await drain(context)
      const from = through
      const answered = new Map<number, number>()
      let unexpected = 0
      let unexpectedStatus = 0
      let errors = 0
      const one = async (): Promise<void> => {
        try {
          const response = await fetch(context.request.url, { method: 'POST', headers: context.request.headers, body: context.request.body ?? null, signal: context.signal })
          const at = performance.now()
          const text = await response.text()
          const id = idOf(text)
          if (response.status !== context.request.expect || id === undefined) {
            unexpected++
            unexpectedStatus = response.status
            return
          }
          answered.set(id, at)
        } catch {
          errors++
        }
      }
      const before = context.cpuSeconds()
      const start = performance.now()
      const sent: Array<Promise<void>> = []
      const total = LAG_RATE * context.seconds
      for (let i = 0; i < total; i++) {
        const wait = start + i * 1000 / LAG_RATE - performance.now()
        if (wait > 0) await delay(wait, undefined, { signal: context.signal })
        sent.push(one())
      }
      await Promise.all(sent)
      const elapsed = (performance.now() - start) / 1000
      const upTo = Math.max(from, ...answered.keys())
      const held = await receiver()
      await held.waitFor(from, upTo, DRAIN_TIMEOUT_MS, context.signal)
      through = upTo
      await delay(SETTLE_MS)
      const cpu = cpuBetween(before, context.cpuSeconds())
      // Delivered before its 201 was read is a lag of none.
      const lags = [...answered].map(([id, at]) => Math.max(0, (held.arrival(id) ?? Number.POSITIVE_INFINITY) - at)).sort((a, b) => a - b)
      return {
        measurement: {
          requestsPerSecond: answered.size / elapsed,
          responses: answered.size,
          latencyMs: { p50: percentile(lags, 0.5), p99: percentile(lags, 0.99) },
          unexpected,
          unexpectedStatus,
          errors,
          timeouts: 0,
          seconds: elapsed
        },
        cpuSeconds: cpu,
        per: upTo - from
      }
    }
  }
}

/** One durable create; the new pet's id. */
async function createOne (request: LoadRequest, signal: AbortSignal): Promise<number> {
  const response = await fetch(request.url, { method: 'POST', headers: request.headers, body: request.body ?? null, signal })
  const text = await response.text()
  const id = idOf(text)
  if (response.status !== request.expect || id === undefined) throw new Error(`${request.method} ${request.url} answered ${response.status}: ${text.slice(0, 500)}`)
  return id
}

/** The pet's id in a 201's body. */
function idOf (text: string): number | undefined {
  const digits = /^\{"id":(\d+)/.exec(text)?.[1]
  return digits === undefined ? undefined : Number(digits)
}

/** Nearest-rank percentile of ascending `sorted`; NaN when nothing was measured. */
function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN
}
