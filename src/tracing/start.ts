// Tracing's entry, imported by the process entry (bin/petstore.js) before
// anything else of the service, when OTEL_EXPORTER_OTLP_ENDPOINT is set.
// It must come first: the PostgreSQL and Redis clients are instrumented by
// hooking their modules as they load, and an ES module cannot be patched
// once imported (https://github.com/open-telemetry/opentelemetry-js/blob/main/doc/esm-support.md).
import { register } from 'node:module'
import { ConfigError, tracingConfig } from '../config.js'

/** The modules the instrumentations patch; the loader hook leaves every other import alone. */
const HOOKED = ['pg', 'ioredis']

export async function startTracing (env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config
  try {
    config = tracingConfig(env)
  } catch (error) {
    // A bad value is reported with the rest of the configuration, as the start fails.
    if (error instanceof ConfigError) return
    throw error
  }
  if (config === undefined) return
  // import-in-the-middle's loader, as @opentelemetry/instrumentation has it
  // for ES modules; `include` keeps it out of every other import.
  register('import-in-the-middle/hook.mjs', import.meta.url, { data: { include: HOOKED } })
  const { setUpTracing } = await import('./sdk.js')
  const adminToken = env.ADMIN_TOKEN
  setUpTracing(config, adminToken === undefined || adminToken === '' ? [] : [adminToken])
}
