#!/usr/bin/env node
// The `petstore` command runs the compiled sources (built by `npm install` and `npm start`).
// The server's tracing, when asked for, starts before anything else of the
// service is imported: it hooks the database and Redis clients as they load.
// Without OTEL_EXPORTER_OTLP_ENDPOINT, nothing of it is loaded.
if (process.argv[2] === 'serve' && (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '') {
  const { startTracing } = await import('../dist/src/tracing/start.js')
  await startTracing()
}
await import('../dist/src/cli/main.js')
