// Counts every answered request, by route template and status (metrics.ts).
import fp from 'fastify-plugin'
import type { Metrics } from '../telemetry/metrics.js'

export default fp<{ metrics: Metrics }>(async function requestMetrics (app, { metrics }) {
  app.addHook('onResponse', (request, reply, done) => {
    // Requests no route matched share one label: raw paths are unbounded.
    metrics.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}, { name: 'request-metrics' })
