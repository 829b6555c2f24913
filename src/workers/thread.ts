// A worker thread's entry. As in the process entry (bin/petstore.js),
// tracing, when asked for, starts before the rest of the service is imported.
import { startTracing } from '../tracing/start.js'

await startTracing()
await import('./worker.js')
