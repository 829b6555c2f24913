// What /metrics says of webhook deliveries (docs/OPERATING.md: Metrics), on
// both backends: attempts by outcome as a real receiver answers them,
// retries, and the age of the oldest event still to deliver, read from the
// database.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { createMetrics, type Metrics } from '../../src/telemetry/metrics.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook, updateWebhook } from '../../src/webhooks/manage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver } from '../support/webhook-receiver.js'
import { buildPetRecord } from '../support/fixtures.js'

const BACKENDS = ['sqlite', 'postgres'] as const

async function value (metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const metric = await metrics.registry.getSingleMetric(name)?.get()
  return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value
}

for (const backend of BACKENDS) {
  describe(`webhook metrics (${backend})`, () => {
    const cleanups: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    it('When one delivery fails then succeeds and another is refused for good, then the counters say retried, succeeded, failed and one retry, and the oldest undelivered age falls to 0', async () => {
      // Arrange
      const storage: Storage = backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      cleanups.push(async () => { await storage.close() })
      const flaky = await new WebhookReceiver().listen()
      const gone = await new WebhookReceiver().listen()
      cleanups.push(async () => { await flaky.close(); await gone.close() })
      flaky.answers.push(500, 200)
      gone.answers.push(410)
      const clock = { ms: Date.now() }
      const now = (): number => clock.ms
      await createWebhook(storage, { url: flaky.url, events: ['pet.created'], description: undefined, now: now() }, { allowPrivate: true })
      await createWebhook(storage, { url: gone.url, events: ['pet.created'], description: undefined, now: now() }, { allowPrivate: true })
      const metrics = createMetrics({ poolUse: () => undefined, droppedLogLines: () => 0, processMetrics: false })
      metrics.watchWebhooks(async () => await storage.oldestUndeliveredEvent(), now)
      const idle = await value(metrics, 'petstore_webhook_oldest_undelivered_seconds')
      await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))
      clock.ms += 90_000
      const waiting = await value(metrics, 'petstore_webhook_oldest_undelivered_seconds')

      // Act
      const dispatcher = new Dispatcher({ storage, logger: pino({ level: 'silent' }), allowPrivate: true, now, observe: metrics.webhookAttempt })
      dispatcher.start()
      cleanups.push(async () => { await dispatcher.stop() })
      await pollUntil(async () => flaky.received.length >= 1 && gone.received.length >= 1 ? true : undefined, { ms: 10_000, every: 50, what: 'the first attempts' })
      clock.ms += 31_000
      await pollUntil(async () => flaky.received.length >= 2 ? true : undefined, { ms: 10_000, every: 50, what: 'the retry' })
      await pollUntil(async () => await value(metrics, 'petstore_webhook_oldest_undelivered_seconds') === 0 ? true : undefined, { ms: 10_000, every: 50, what: 'nothing left to deliver' })

      // Assert
      assert.equal(idle, 0)
      assert.ok(waiting !== undefined && waiting >= 89 && waiting < 120, `oldest undelivered: ${waiting}`)
      assert.equal(await value(metrics, 'petstore_webhook_deliveries_total', { outcome: 'retried' }), 1)
      assert.equal(await value(metrics, 'petstore_webhook_deliveries_total', { outcome: 'succeeded' }), 1)
      assert.equal(await value(metrics, 'petstore_webhook_deliveries_total', { outcome: 'failed' }), 1)
      assert.equal(await value(metrics, 'petstore_webhook_retries_total'), 1)
    })

    it('When the only pending delivery is to a disabled endpoint, then it is not counted as undelivered', async () => {
      // Arrange
      const storage: Storage = backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      cleanups.push(async () => { await storage.close() })
      const { id } = await createWebhook(storage, { url: 'http://127.0.0.1:9/h', events: undefined, description: undefined, now: Date.now() }, { allowPrivate: true })
      await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))
      await storage.fanOutEvents(10, Date.now())
      const metrics = createMetrics({ poolUse: () => undefined, droppedLogLines: () => 0, processMetrics: false })
      metrics.watchWebhooks(async () => await storage.oldestUndeliveredEvent(), () => Date.now() + 60_000)
      const pending = await value(metrics, 'petstore_webhook_oldest_undelivered_seconds')

      // Act
      await updateWebhook(storage, id, { enabled: false }, Date.now(), { allowPrivate: true })

      // Assert
      assert.ok(pending !== undefined && pending >= 59, `oldest undelivered: ${pending}`)
      assert.equal(await value(metrics, 'petstore_webhook_oldest_undelivered_seconds'), 0)
    })
  })
}
