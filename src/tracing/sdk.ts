// The OpenTelemetry SDK, set up for the service: spans go over OTLP/HTTP
// (JSON) to the collector, in batches; a client's W3C `traceparent` is
// continued; one span per request (@fastify/otel), with child spans for the
// PostgreSQL and Redis clients' calls. Loaded by start.ts only, and imports
// nothing that loads Fastify (test/tracing/start.test.ts).
import { context, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider,
  type Sampler
} from '@opentelemetry/sdk-trace'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import type { FastifyRequest } from 'fastify'
import type { TraceSampler, TracingConfig } from '../config.js'
import { loggableUrl } from '../telemetry/loggable-url.js'
import { installTracingHooks } from '../telemetry/tracing-hooks.js'
import { RedactingExporter } from './redacting-exporter.js'

/** `secrets`: values never to be written into a span (ADMIN_TOKEN), as the request log has them. */
export function setUpTracing (config: TracingConfig, secrets: readonly string[] = []): void {
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    resource: resourceFromAttributes({ 'service.name': 'petstore' }).merge(detectResources({ detectors: [envDetector] })),
    sampler: sampler(config.sampler, config.samplerRatio),
    spanProcessors: [new BatchSpanProcessor({
      // Its address, headers and timeout from the standard variables (OTEL_EXPORTER_OTLP_*);
      // what a client sent may be echoed anywhere in a span, so each is redacted on its way out.
      exporter: new RedactingExporter(new OTLPTraceExporter(), secrets),
      scheduledDelayMillis: config.scheduleDelayMs,
      exportTimeoutMillis: config.exportTimeoutMs,
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize
    })]
  })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  trace.setGlobalTracerProvider(provider)

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new FastifyOtelInstrumentation({
        // Every Fastify instance, as it is made: no change to how the app is built.
        registerOnInitialization: true,
        // One span per request: not one more per hook and handler.
        instrumentHooks: false,
        instrumentHandler: false,
        requestHook: (span, request) => {
          const route = request.routeOptions.url
          // Named as the semantic conventions name an HTTP server span (by route, never by path).
          span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
          // The path only, and a token sent in it by mistake redacted, as the log has it.
          span.setAttribute('url.path', loggableUrl(pathOf(request.url), secrets))
        }
      }),
      // Spans only inside a request's: not for the background work (the key
      // index's refresh, the purge, the pings of a Redis that cannot be reached).
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true })
    ]
  })

  installTracingHooks({
    traceIdOf: (request: FastifyRequest) => {
      const { context: requestContext } = request.opentelemetry()
      return requestContext === null || requestContext === undefined ? undefined : trace.getSpanContext(requestContext)?.traceId
    },
    shutdown: async () => { await provider.shutdown() }
  })
}

function pathOf (url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

function sampler (name: TraceSampler, ratio: number): Sampler {
  switch (name) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
  }
}
