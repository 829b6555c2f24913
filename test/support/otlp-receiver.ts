// A collector's OTLP/HTTP traces endpoint, as far as the tests and the
// benchmark need one: it accepts POST /v1/traces in the JSON encoding
// (https://opentelemetry.io/docs/specs/otlp/#otlphttp) and keeps the spans,
// or only counts them. On 127.0.0.1, on a port chosen at run time.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

type AnyValue = { stringValue?: string, intValue?: number | string, boolValue?: boolean, doubleValue?: number }

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  name: string
  /** 2 is SERVER, 3 CLIENT (https://opentelemetry.io/docs/specs/otlp/). */
  kind: number
  /** The instrumentation that made it. */
  scope: string
  attributes: Record<string, string | number | boolean | undefined>
}

interface ExportRequest {
  resourceSpans?: Array<{
    scopeSpans?: Array<{
      scope?: { name?: string }
      spans?: Array<{ traceId: string, spanId: string, parentSpanId?: string, name: string, kind: number, attributes?: Array<{ key: string, value: AnyValue }> }>
    }>
  }>
}

/** Once per span in the JSON encoding: `parentSpanId` differs in case. */
const SPAN_ID = Buffer.from('"spanId":')

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = []
  /** Each export's body as received, parsed, with what `spans` leaves out (status, events, links), for a test that reads all of it. */
  readonly exported: unknown[] = []
  /** Spans received, kept or not. */
  count = 0
  /** Export requests received. */
  exports = 0
  readonly #server: Server

  private constructor (readonly keep: boolean) {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      request.on('end', () => {
        if (request.method !== 'POST' || request.url !== '/v1/traces') {
          response.writeHead(404).end()
          return
        }
        const body = Buffer.concat(chunks)
        this.exports++
        try {
          if (keep) this.#take(JSON.parse(body.toString('utf8')) as ExportRequest)
          else this.count += occurrences(body, SPAN_ID)
        } catch {
          response.writeHead(400).end()
          return
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
  }

  /** `keep: false` is a sink: it answers every export and counts its spans without parsing it. */
  static async start ({ keep = true }: { keep?: boolean } = {}): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver(keep)
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve))
    return receiver
  }

  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to: the exporter adds /v1/traces. */
  get endpoint (): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  async close (): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #take (body: ExportRequest): void {
    this.exported.push(body)
    for (const { scopeSpans = [] } of body.resourceSpans ?? []) {
      for (const { scope, spans = [] } of scopeSpans) {
        for (const span of spans) {
          this.count++
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId === '' ? undefined : span.parentSpanId,
            name: span.name,
            kind: span.kind,
            scope: scope?.name ?? '',
            attributes: Object.fromEntries((span.attributes ?? []).map(({ key, value }) =>
              [key, value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.doubleValue]))
          })
        }
      }
    }
  }
}

function occurrences (haystack: Buffer, needle: Buffer): number {
  let found = 0
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found++
  return found
}
