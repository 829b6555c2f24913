// What the main thread and its workers say to each other (docs/WORKERS.md).
import type { MetricObjectWithValues, MetricValue } from 'prom-client'
import type { Config } from '../config.js'
import type { InFlightTable } from '../limits/in-flight.js'
import type { SharedLimits } from '../limits/shared-memory-store.js'

/** Given to each worker as it starts. */
export interface WorkerData {
  /** The configuration the main thread read: read once, for every worker. */
  config: Config
  /** The public port: PORT, or with PORT=0 the free one the main thread found. */
  port: number
  /** The rate-limit counters every worker shares: without Redis, and while it is unreachable. */
  limits: SharedLimits
  /** Whether those counters are used in Redis's stead, for the whole instance (limits/degradation.ts). */
  degradation: SharedArrayBuffer
  /** The requests in flight per key, counted by every worker (limits/in-flight.ts), and this worker's column there. */
  inFlight: InFlightTable
  column: number
  /** The workers' turns at writing a SQLite file (db/sqlite/write-turns.ts). */
  writeTurns: SharedArrayBuffer
  /** Whether to say `ready` and listen only when told: the first workers, while the main thread holds the port. */
  listenWhenTold: boolean
}

export type ToWorker =
  | { kind: 'listen' }
  | { kind: 'stop' }
  | { kind: 'metrics', id: number }

export type FromWorker =
  /** Its app and stores are open: it listens once told to. */
  | { kind: 'ready' }
  /** `rateLimitStore`: the store's name, for the start's log line. */
  | { kind: 'listening', address: string, rateLimitStore: string }
  | { kind: 'log', text: string }
  | { kind: 'metrics', id: number, metrics: Array<MetricObjectWithValues<MetricValue<string>>> }
