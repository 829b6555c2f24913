import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { buildAdminApp } from '../../src/http/admin.js'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { timedStorage } from '../../src/db/timed.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { StoreHealth } from '../../src/limits/store.js'
import { createMetrics, type Metrics } from '../../src/telemetry/metrics.js'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPet } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'

/** An app whose storage is timed and whose requests are counted, as run/service.ts builds it when ADMIN_PORT is set. */
async function withMeasuredApp (work: (t: TestApp, scrape: () => Promise<string>) => Promise<void>, env: Record<string, string> = {}): Promise<void> {
  const opened = openSqlite('sqlite::memory:')
  const limiter = new MemoryStore()
  const metrics = createMetrics({ limiter, poolUse: () => opened.poolUse(), droppedLogLines: () => 0 })
  const t = await buildTestApp(env, { storage: timedStorage(opened, metrics.query), limiter, metrics })
  const admin = await buildAdminApp({ metrics })
  try {
    await work(t, async () => {
      const response = await admin.inject({ url: '/metrics' })
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/)
      return response.body
    })
  } finally {
    await admin.close()
    await t.close()
  }
}

/** The value of one series in Prometheus's text format, or undefined when it is absent. */
function sample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('metrics', () => {
  it('When requests are answered, then they are counted and timed by method, route template and status, never by raw path', () => withMeasuredApp(async (t, scrape) => {
    const token = await t.newKey('pro')
    const created = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: JSON.stringify(buildPet()) })
    const id = String(created.json<{ id: number }>().id)
    await t.app.inject({ url: `/v1/pets/${id}`, headers: bearer(token) })
    await t.app.inject({ url: '/v1/pets/999999', headers: bearer(token) })
    await t.app.inject({ url: '/v1/no/such/thing', headers: bearer(token) })

    const text = await scrape()

    assert.equal(sample(text, 'petstore_http_requests_total{method="POST",route="/v1/pets",status="201"}'), 1)
    assert.equal(sample(text, 'petstore_http_requests_total{method="GET",route="/v1/pets/:petId",status="200"}'), 1)
    assert.equal(sample(text, 'petstore_http_requests_total{method="GET",route="/v1/pets/:petId",status="404"}'), 1)
    assert.equal(sample(text, 'petstore_http_requests_total{method="GET",route="unmatched",status="404"}'), 1)
    assert.equal(sample(text, 'petstore_http_request_duration_seconds_count{method="GET",route="/v1/pets/:petId",status="200"}'), 1)
    assert.doesNotMatch(text, /route="[^"]*(999999|no\/such|pets\/\d)/)
  }))

  it('When a key is refused and then banned, then refusals are counted by code and the ban once', () => withMeasuredApp(async (t, scrape) => {
    const token = await t.newKey('free', { perMinute: 1, perDay: 100 })
    for (let i = 0; i < 6; i++) await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    const text = await scrape()

    // One admitted; three refusals earn the ban; the next two are banned.
    assert.equal(sample(text, 'petstore_rate_limit_refusals_total{code="rate_limited"}'), 3)
    assert.equal(sample(text, 'petstore_rate_limit_refusals_total{code="api_key_banned"}'), 2)
    assert.equal(sample(text, 'petstore_rate_limit_bans_total'), 1)
  }, { RATE_LIMIT_BAN_THRESHOLD: '3' }))

  it('When the database is used, then each storage operation is timed by name and outcome', () => withMeasuredApp(async (t, scrape) => {
    const token = await t.newKey('pro')
    await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    const text = await scrape()

    assert.equal(sample(text, 'petstore_db_query_duration_seconds_count{operation="listPets",outcome="ok"}'), 1)
    assert.ok((sample(text, 'petstore_db_query_duration_seconds_count{operation="findApiKeyByTokenHash",outcome="ok"}') ?? 0) >= 1)
    assert.match(text, /^process_resident_memory_bytes \d+/m)
    assert.match(text, /^nodejs_eventloop_lag_seconds /m)
    assert.doesNotMatch(text, /petstore_db_pool/, 'SQLite has no pool')
  }))

  it('When a storage operation fails, then it is timed as an error', async () => {
    const seen: Array<[string, boolean]> = []
    const opened = openSqlite('sqlite::memory:')
    const storage: Storage = timedStorage(opened, (operation, _seconds, failed) => { seen.push([operation, failed]) })
    await storage.close()

    await assert.rejects(storage.listPets({ afterId: 0n, status: undefined, limit: 1 }))

    assert.deepEqual(seen.at(-1), ['listPets', true])
  })

  it('When the rate-limit store is degraded, then the gauge says 1, and 0 once it is back', async () => {
    let health: StoreHealth = { status: 'degraded', reason: 'redis unreachable' }
    const metrics: Metrics = createMetrics({ limiter: { name: 'redis', health: async () => health }, poolUse: () => undefined, droppedLogLines: () => 0 })

    const degraded = await metrics.registry.metrics()
    health = { status: 'ok' }
    const back = await metrics.registry.metrics()

    assert.equal(sample(degraded, 'petstore_rate_limit_store_degraded{store="redis"}'), 1)
    assert.equal(sample(back, 'petstore_rate_limit_store_degraded{store="redis"}'), 0)
  })

  it('When log lines are dropped, then the counter adds them up across scrapes', async () => {
    let dropped = 0
    const metrics = createMetrics({ limiter: new MemoryStore(), poolUse: () => undefined, droppedLogLines: () => dropped })

    dropped = 3
    const first = await metrics.registry.metrics()
    dropped = 5
    const second = await metrics.registry.metrics()

    assert.equal(sample(first, 'petstore_log_lines_dropped_total'), 3)
    assert.equal(sample(second, 'petstore_log_lines_dropped_total'), 5)
  })

  it('When the shedder reads the event loop, then its delay is shown as last read; before any reading (SHED=off), it is not there', async () => {
    const metrics = createMetrics({ limiter: new MemoryStore(), poolUse: () => undefined, droppedLogLines: () => 0 })

    const before = await metrics.registry.metrics()
    metrics.eventLoopDelay(12)
    metrics.eventLoopDelay(250)
    const after = await metrics.registry.metrics()

    assert.doesNotMatch(before, /petstore_event_loop_delay_seconds/)
    assert.equal(sample(after, 'petstore_event_loop_delay_seconds'), 0.25)
  })

  it('When the database is PostgreSQL, then its pool\'s connections are shown', async () => {
    const storage = await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
    try {
      const metrics = createMetrics({ limiter: new MemoryStore(), poolUse: () => storage.poolUse(), droppedLogLines: () => 0 })
      await storage.ping()

      const text = await metrics.registry.metrics()

      assert.equal(sample(text, 'petstore_db_pool_connections{state="max"}'), 4)
      assert.ok((sample(text, 'petstore_db_pool_connections{state="open"}') ?? 0) >= 1)
      assert.equal(sample(text, 'petstore_db_pool_waiting'), 0)
      assert.equal(sample(text, 'petstore_db_pool_wait_seconds'), 0)
    } finally {
      await storage.close()
    }
  })

  it('When /metrics is asked of the public port, then it is not there', async () => {
    const t = await buildTestApp()
    try {
      const response = await t.app.inject({ url: '/metrics' })

      assert.equal(response.statusCode, 404)
      assert.doesNotMatch(response.body, /petstore_|process_/)
    } finally {
      await t.close()
    }
  })
})
