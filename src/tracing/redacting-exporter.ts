// Every span as it leaves the process, with any token or secret (ADMIN_TOKEN)
// in its name, attributes, status, events or links redacted as the request
// log redacts them (telemetry/loggable-url.ts). At the export, not where each
// is written: instrumentations copy what a request sent into spans in their
// own ways (an error's message and stack, a 404 that names the path, a
// validation error that names an unknown field), and one place sees them all.
import type { Attributes, AttributeValue, Link, SpanStatus } from '@opentelemetry/api'
import type { ExportResult } from '@opentelemetry/core'
import type { ReadableSpan, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace'
import { loggableText } from '../telemetry/loggable-url.js'

export class RedactingExporter implements SpanExporter {
  constructor (private readonly inner: SpanExporter, private readonly secrets: readonly string[]) {}

  export (spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans.map((span) => redactedSpan(span, this.secrets)), resultCallback)
  }

  async shutdown (): Promise<void> {
    await this.inner.shutdown()
  }

  async forceFlush (): Promise<void> {
    await this.inner.forceFlush?.()
  }
}

/** A copy of `span`: the SDK's own is left as it is, since its processors may still hold it. */
function redactedSpan (span: ReadableSpan, secrets: readonly string[]): ReadableSpan {
  const text = (value: string): string => loggableText(value, secrets)
  const status: SpanStatus = span.status.message === undefined ? span.status : { ...span.status, message: text(span.status.message) }
  return {
    name: text(span.name),
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status,
    attributes: redactedAttributes(span.attributes, text),
    links: span.links.map((link): Link => link.attributes === undefined ? link : { ...link, attributes: redactedAttributes(link.attributes, text) }),
    events: span.events.map((event): TimedEvent => ({
      ...event,
      name: text(event.name),
      ...(event.attributes === undefined ? {} : { attributes: redactedAttributes(event.attributes, text) })
    })),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount
  }
}

function redactedAttributes (attributes: Attributes, text: (value: string) => string): Attributes {
  const out: Attributes = {}
  for (const [key, value] of Object.entries(attributes)) out[text(key)] = redactedValue(value, text)
  return out
}

function redactedValue (value: AttributeValue | undefined, text: (value: string) => string): AttributeValue | undefined {
  if (typeof value === 'string') return text(value)
  if (Array.isArray(value)) return value.map((item: unknown) => (typeof item === 'string' ? text(item) : item)) as AttributeValue
  return value
}
