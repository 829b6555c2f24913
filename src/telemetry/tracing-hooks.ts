// What the rest of the service asks of tracing: the trace id of a request,
// for its log line, and a last export of the spans at shutdown. Tracing
// installs both when it starts (tracing/sdk.ts); when it is off, both do
// nothing, and this file imports nothing of OpenTelemetry. It is here, not in
// tracing/, because the request log asks it and tracing/ imports the log's
// redaction: one way, tracing/ → telemetry/ (docs/DEVELOPING.md#imports-flow-one-way).
import type { FastifyRequest } from 'fastify'
import { within } from '../deadline.js'

export interface TracingHooks {
  /** The trace id of the request's span, when it has one. */
  traceIdOf: (request: FastifyRequest) => string | undefined
  /** Exports the spans not yet exported, and stops. */
  shutdown: () => Promise<void>
}

let installed: TracingHooks | undefined

export function installTracingHooks (hooks: TracingHooks): void {
  installed = hooks
}

/** Whether tracing started: only the process entry starts it (bin/petstore.js), before the service's modules. */
export function tracingStarted (): boolean {
  return installed !== undefined
}

export function traceIdOf (request: FastifyRequest): string | undefined {
  return installed?.traceIdOf(request)
}

/** Exports the last spans, for at most `ms`; never throws: a collector that does not answer must not hold up the exit. */
export async function shutdownTracing (ms: number): Promise<void> {
  const { shutdown } = installed ?? {}
  if (shutdown === undefined) return
  try {
    await within(ms, async () => { await shutdown() })
  } catch {}
}
