// Shared arrangements for component tests: an app on an in-memory SQLite
// database and an in-process rate-limit store, or on PostgreSQL and Redis,
// a clock the test moves, and small factories.
import { randomUUID } from 'node:crypto'
import { appendFileSync } from 'node:fs'
import type { FastifyBaseLogger, FastifyInstance, LightMyRequestResponse } from 'fastify'
import pino from 'pino'
import { buildApp, type AppDeps } from '../../src/http/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { issueKey } from '../../src/keys/manage.js'
import type { Plan } from '../../src/domain.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { RateLimitStore } from '../../src/limits/store.js'
import type { Metrics } from '../../src/telemetry/metrics.js'
import type { Overload } from '../../src/telemetry/load.js'
import { CLOCK_START, bearer } from './fixtures.js'
import { freshPostgresDatabase } from './postgres.js'
import { awayFromMinuteEdge, openTestStore } from './redis.js'
import { testLogFile } from './test-logs.js'

/** A clock for tests: starts at a fixed instant, moves only when told. */
class TestClock {
  constructor (public ms: number = CLOCK_START) {}
  now = (): number => this.ms
  advance (ms: number): void { this.ms += ms }
  set (iso: string): void { this.ms = Date.parse(iso) }
}

export interface TestApp {
  app: FastifyInstance
  storage: Storage
  limiter: RateLimitStore
  clock: TestClock
  config: Config
  /** A new key's token; free plan unless told otherwise. */
  newKey (plan?: Plan, limits?: { perMinute?: number, perDay?: number, concurrency?: number }): Promise<string>
  close (): Promise<void>
}

/** The storage backends that component tests run on: an in-memory SQLite database, or a fresh PostgreSQL database. */
type StorageBackend = 'sqlite' | 'postgres'

async function openTestStorage (backend: StorageBackend): Promise<Storage> {
  return backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
}

/**
 * The two ways the service runs: on its own, and scaled out. The Redis
 * store decides on Redis's clock, as in service, so only the in-process
 * store follows the test's clock across windows and bans; it has a namespace
 * of its own, so that apps sharing the test Redis never share a subject.
 */
export const CONFIGURATIONS = [
  { name: 'SQLite, in-process limits', backend: 'sqlite', limiterBackend: 'memory' },
  { name: 'PostgreSQL, Redis', backend: 'postgres', limiterBackend: 'redis' }
] as const

async function openTestLimiter (backend: 'memory' | 'redis', clock: TestClock): Promise<RateLimitStore> {
  return backend === 'memory' ? new MemoryStore(clock.now) : await openTestStore('single', { namespace: randomUUID() })
}

/**
 * The load a test app reads unless its test gives one: never overloaded, so
 * that a test process's own pauses (a large insert, a busy neighbour) shed
 * none of its requests. The shedder's tests give theirs (test/plugins/shed.test.ts).
 */
const NEVER_OVERLOADED: Overload = Object.freeze({ cause: undefined, reading: { eventLoopDelayMs: 0, dbPoolWaitMs: undefined } })

export async function buildTestApp (
  env: Record<string, string> = {},
  options: {
    storage?: Storage, backend?: StorageBackend, limiter?: RateLimitStore, limiterBackend?: 'memory' | 'redis', logger?: FastifyBaseLogger, metrics?: Metrics, timeouts?: AppDeps['timeouts'], overload?: Overload
  } = {}
): Promise<TestApp> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '8080', ...env })
  const clock = new TestClock()
  const storage = options.storage ?? await openTestStorage(options.backend ?? 'sqlite')
  const limiter = options.limiter ?? await openTestLimiter(options.limiterBackend ?? 'memory', clock)
  const app = await buildApp({
    config, storage, limiter, now: clock.now, monotonic: clock.now, logger: options.logger, metrics: options.metrics, timeouts: options.timeouts, overload: options.overload ?? NEVER_OVERLOADED
  })
  await app.ready()
  // A test counts in one minute of Redis's clock: starting near its end, its
  // second request could land in a fresh window and see its first undone.
  if (options.limiter === undefined && options.limiterBackend === 'redis') await awayFromMinuteEdge(3000)
  return {
    app,
    storage,
    limiter,
    clock,
    config,
    async newKey (plan = 'free', limits = {}) {
      const key = await issueKey(storage, {
        plan,
        name: 'test',
        perMinute: limits.perMinute,
        perDay: limits.perDay,
        concurrency: limits.concurrency,
        environment: config.environment,
        now: clock.now()
      })
      return key.token
    },
    async close () {
      await app.close()
      await storage.close()
      await limiter.close()
    }
  }
}

/** An app and a key on it, for a describe whose tests share both. */
export async function appWithKey (plan: Plan = 'pro'): Promise<{ t: TestApp, token: string }> {
  const t = await buildTestApp()
  return { t, token: await t.newKey(plan) }
}

/** Sends a JSON body as its exact text, so that big integers reach the server unrounded. */
export function jsonHeaders (token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...bearer(token), 'content-type': 'application/json', ...extra }
}

export function errorOf (response: LightMyRequestResponse): { code: string, message: string, status: number, details?: Array<{ field: string, reason: string }> } {
  return response.json()
}

export interface LogEntry {
  level: number
  msg?: string
  err?: { type?: string, message?: string, stack?: string, code?: string }
  requestId?: string
  keyId?: number
  method?: string
  route?: string
  url?: string
  status?: number
  code?: string
  durationMs?: number
  bannedUntil?: string
}

/** A pino logger as the server makes it, whose lines the test reads back; they go to the run's log folder too, to be scanned for secrets. */
export function capturingLogger (): { logger: FastifyBaseLogger, entries: () => LogEntry[] } {
  const lines: string[] = []
  const logFile = testLogFile('in-process')
  const logger = pino({ level: 'info' }, {
    write: (line: string) => {
      lines.push(line)
      if (logFile !== undefined) appendFileSync(logFile, line)
    }
  })
  return { logger, entries: () => lines.map((line) => JSON.parse(line) as LogEntry) }
}
