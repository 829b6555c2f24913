// Endpoints that fail every delivery for 5 days are disabled (docs/WEBHOOKS.md:
// Failing endpoints), on both backends, with a real receiver and the
// dispatcher on an injected clock: the reason and time shown, the log line,
// a success in between that ends the streak, and an operator's re-enabling
// that clears them.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { ClaimQuery, DeliveryOutcome, Storage, WebhookStore } from '../../src/db/storage.js'
import { DISABLE_AFTER_MS, Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook, showWebhook, updateWebhook } from '../../src/webhooks/manage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver } from '../support/webhook-receiver.js'
import { buildPetRecord } from '../support/fixtures.js'

const BACKENDS = ['sqlite', 'postgres'] as const
const DAY_MS = 86_400_000

/** The store as the dispatcher sees it, counting deliveries taken and outcomes written: settled when every taken one is written. */
function countingOutcomes (storage: Storage): { storage: WebhookStore, settled: () => boolean } {
  let taken = 0
  let written = 0
  const counted = new Proxy(storage, {
    get (target, key) {
      if (key === 'claimDeliveries') {
        return async (query: ClaimQuery) => {
          const deliveries = await target.claimDeliveries(query)
          taken += deliveries.length
          return deliveries
        }
      }
      if (key === 'recordDeliveries') {
        return async (outcomes: readonly DeliveryOutcome[]) => {
          await target.recordDeliveries(outcomes)
          written += outcomes.length
        }
      }
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  return { storage: counted, settled: () => written === taken }
}

for (const backend of BACKENDS) {
  describe(`failing webhook endpoints (${backend})`, () => {
    const cleanups: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    async function subject (): Promise<{ storage: Storage, receiver: WebhookReceiver, clock: { ms: number }, id: number, logLines: string[], settled: () => boolean }> {
      const storage = backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      cleanups.push(async () => { await storage.close() })
      const receiver = await new WebhookReceiver().listen()
      cleanups.push(async () => { await receiver.close() })
      const clock = { ms: Date.now() }
      const { id } = await createWebhook(storage, { url: receiver.url, events: ['pet.created'], description: undefined, now: clock.ms }, { allowPrivate: true })
      const logLines: string[] = []
      const counted = countingOutcomes(storage)
      const dispatcher = new Dispatcher({ storage: counted.storage, logger: pino({ level: 'info' }, { write: (line: string) => { logLines.push(line) } }), allowPrivate: true, now: () => clock.ms })
      dispatcher.start()
      cleanups.push(async () => { await dispatcher.stop() })
      return { storage, receiver, clock, id, logLines, settled: counted.settled }
    }

    /**
     * An event, and an attempt answered: its own, or a retry of an earlier
     * one, whichever comes first, with the receiver's next answer; then every
     * taken delivery's outcome written, so that none is written after the
     * test moves the clock on (regression: a failure written late, at the
     * later time, disabled the endpoint before the next event was sent).
     */
    async function attempt ({ storage, receiver, settled }: { storage: Storage, receiver: WebhookReceiver, settled: () => boolean }): Promise<void> {
      const count = receiver.received.length
      await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))
      await pollUntil(async () => receiver.received.length > count && settled() ? true : undefined, { ms: 10_000, every: 20, what: 'an attempt, its outcome written' })
    }

    it('When every delivery to an endpoint fails for 5 days, then it is disabled, with the reason and time shown and logged; enabling it clears them', async () => {
      // Arrange
      const arranged = await subject()
      const { storage, receiver, clock, id, logLines } = arranged
      receiver.answers.push(...new Array<number>(200).fill(500))
      const firstFailure = clock.ms
      await attempt(arranged)
      clock.ms += DISABLE_AFTER_MS - DAY_MS
      await attempt(arranged)
      const stillOn = await showWebhook(storage, id)

      // Act
      clock.ms += DAY_MS + 60_000
      await attempt(arranged)
      const disabled = await pollUntil(async () => {
        const webhook = await showWebhook(storage, id)
        return webhook.enabled ? undefined : webhook
      }, { ms: 10_000, every: 50, what: 'the endpoint disabled' })
      const enabled = await updateWebhook(storage, id, { enabled: true }, clock.ms, { allowPrivate: true })

      // Assert
      assert.equal(stillOn.enabled, true)
      assert.equal(disabled.disabledReason, `every delivery failed for 5 days, since ${new Date(firstFailure).toISOString()}`)
      assert.equal(disabled.disabledAt, new Date(clock.ms).toISOString())
      const line = logLines.map((text) => JSON.parse(text) as { level: number, msg: string, endpointId?: number }).find((entry) => entry.msg.includes('disabled'))
      assert.ok(line !== undefined, logLines.join(''))
      assert.equal(line.level, 40)
      assert.equal(line.endpointId, id)
      assert.deepEqual([enabled.enabled, enabled.disabledReason, enabled.disabledAt], [true, null, null])
    })

    it('When a delivery succeeds between failures, then the 5 days start again from the next failure', async () => {
      // Arrange
      const arranged = await subject()
      const { storage, receiver, clock, id } = arranged
      receiver.answers.push(...new Array<number>(200).fill(500))
      await attempt(arranged)
      clock.ms += 3 * DAY_MS
      receiver.answers.unshift(204)
      await attempt(arranged)
      await pollUntil(async () => receiver.answers[0] === 500 ? true : undefined, { ms: 10_000, every: 50, what: 'the success answered' })
      clock.ms += DAY_MS
      await attempt(arranged)

      // Act: 5 days after the first failure, 1 after the streak's start.
      clock.ms += DAY_MS + 60_000
      await attempt(arranged)
      await new Promise((resolve) => setTimeout(resolve, 500))

      // Assert
      const webhook = await showWebhook(storage, id)
      assert.deepEqual([webhook.enabled, webhook.disabledReason], [true, null])
    })
  })
}
