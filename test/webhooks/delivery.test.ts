// Webhook deliveries (docs/WEBHOOKS.md), on both backends: events written by
// the service's own changes reach a real receiver on 127.0.0.1, signed so
// that the `standardwebhooks` library verifies them as a receiver would;
// retries keep the webhook-id; final answers stop them; names that resolve
// to loopback are refused at delivery without WEBHOOK_ALLOW_PRIVATE.
import { after, afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import type { EventType } from '../../src/domain.js'
import { HOLDER_REPORT, reportToken } from '../../src/keys/leaks.js'
import { issueKey, revokeKey, rollKey, updateKey } from '../../src/keys/manage.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook, listDeliveries } from '../../src/webhooks/manage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver, verify } from '../support/webhook-receiver.js'
import { buildPetRecord } from '../support/fixtures.js'

const BACKENDS = ['sqlite', 'postgres'] as const

class Clock {
  ms = Date.now()
  now = (): number => this.ms
}

interface Subject {
  storage: Storage
  receiver: WebhookReceiver
  clock: Clock
  dispatcher: Dispatcher
  logLines: string[]
}

async function openStorage (backend: typeof BACKENDS[number]): Promise<Storage> {
  return backend === 'sqlite' ? openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
}

for (const backend of BACKENDS) {
  describe(`webhook deliveries (${backend})`, () => {
    const subjects: Subject[] = []
    afterEach(async () => {
      for (const subject of subjects.splice(0)) {
        await subject.dispatcher.stop()
        await subject.receiver.close()
        await subject.storage.close()
      }
    })
    after(() => {})

    /** A store, a receiver, an endpoint to it with the types given, and a dispatcher on the clock given. */
    async function subject (
      { events, url, allowPrivate = true, clockOffsetMs = 0 }: { events?: EventType[], url?: (receiver: WebhookReceiver) => string, allowPrivate?: boolean, clockOffsetMs?: number } = {}
    ): Promise<Subject & { secret: string, endpointId: number }> {
      const storage = await openStorage(backend)
      const receiver = await new WebhookReceiver().listen()
      const clock = new Clock()
      clock.ms += clockOffsetMs
      const { secret, id: endpointId } = await createWebhook(storage, { url: url?.(receiver) ?? receiver.url, events, description: undefined, now: clock.now() }, { allowPrivate: true })
      const logLines: string[] = []
      const logger = pino({ level: 'info' }, { write: (line: string) => { logLines.push(line) } })
      const dispatcher = new Dispatcher({ storage, logger, allowPrivate, now: clock.now })
      dispatcher.start()
      const made = { storage, receiver, clock, dispatcher, logLines }
      subjects.push(made)
      return { ...made, secret, endpointId }
    }

    const arrived = async (receiver: WebhookReceiver, count: number, what: string): Promise<void> => {
      await pollUntil(async () => receiver.received.length >= count ? true : undefined, { ms: 10_000, every: 50, what })
    }

    it('When an animal is added and a key made, changed, rolled and revoked, then each event arrives once, verified by standardwebhooks, and no key event carries a token', async () => {
      // Arrange
      const { storage, receiver, secret, clock } = await subject()

      // Act
      const pet = await storage.createPet(buildPetRecord({ name: 'Rex "the dog"', categoryId: 9007199254740993n, status: 'available' }))
      const key = await issueKey(storage, { plan: 'free', name: 'partner', perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now() })
      await updateKey(storage, key.id, { name: 'renamed' }, clock.now())
      const rolled = await rollKey(storage, key.id, 60, clock.now())
      await revokeKey(storage, key.id, clock.now())
      await revokeKey(storage, key.id, clock.now())
      await arrived(receiver, 5, 'five deliveries')

      // Assert
      const payloads = receiver.received.map((delivery) => verify(secret, delivery))
      assert.deepEqual(payloads.map((p) => p.type).sort(), ['key.created', 'key.revoked', 'key.rolled', 'key.updated', 'pet.created'])
      const petEvent = receiver.received.find((delivery) => delivery.body.includes('"pet.created"'))
      // The data is the Pet as the API writes it, its int64 exact.
      assert.match(petEvent?.body ?? '', new RegExp(`"data":\\{"id":${pet.id},"name":"Rex \\\\"the dog\\\\"","categoryId":9007199254740993,"status":"available"\\}\\}$`))
      for (const delivery of receiver.received) {
        assert.match(String(delivery.headers['webhook-id']), /^evt_\d+$/)
        assert.equal(delivery.headers['content-type'], 'application/json')
        assert.ok(!delivery.body.includes(key.token) && !delivery.body.includes(rolled.token), 'a token in an event')
        assert.doesNotMatch(delivery.body, /tokenHash|token_hash|"token"|whsec_/)
      }
      const revoked = payloads.find((p) => p.type === 'key.revoked')
      assert.equal(revoked?.data.revoked, true)
      assert.equal(revoked?.data.id, key.id)
      assert.equal(receiver.ids().size, 5)
    })

    it('When a scanner\'s report revokes a key, then key.leaked arrives beside key.revoked, verified by standardwebhooks, with the key and where its token was found, and no token', async () => {
      // Arrange
      const { storage, receiver, secret, clock } = await subject({ events: ['key.leaked', 'key.revoked'] })
      const key = await issueKey(storage, { plan: 'free', name: 'leaky', perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now() })
      const sighting = { token: key.token, report: `github:${'ab'.repeat(32)}`, url: 'https://github.com/octocat/Hello-World/blob/main/.env', source: 'content' }

      // Act: the report twice (GitHub retries), then the holder too: only the first revokes, so only it announces.
      assert.equal(await reportToken(storage, sighting, clock.now()), 'true_positive')
      clock.ms += 1000
      assert.equal(await reportToken(storage, sighting, clock.now()), 'true_positive')
      assert.equal(await reportToken(storage, { token: key.token, report: HOLDER_REPORT, url: null, source: null }, clock.now()), 'true_positive')
      await arrived(receiver, 2, 'the revocation and the leak')
      await new Promise((resolve) => setTimeout(resolve, 300))

      // Assert
      assert.equal(receiver.received.length, 2)
      const payloads = receiver.received.map((delivery) => verify(secret, delivery))
      assert.deepEqual(payloads.map((p) => p.type).sort(), ['key.leaked', 'key.revoked'])
      const leaked = payloads.find((p) => p.type === 'key.leaked')
      assert.equal(leaked?.data.id, key.id)
      assert.equal(leaked?.data.revoked, true)
      assert.equal(leaked?.data.tokenHint, key.tokenHint)
      const reportedAt = new Date(clock.ms - 1000).toISOString()
      assert.deepEqual(leaked?.data.leak, { reportedAt, report: sighting.report, url: sighting.url, source: 'content' })
      assert.equal(leaked?.data.revokedAt, reportedAt)
      assert.equal(leaked?.timestamp, reportedAt)
      for (const delivery of receiver.received) {
        assert.ok(!delivery.body.includes(key.token), 'a token in an event')
        assert.doesNotMatch(delivery.body, /tokenHash|token_hash|"token"|whsec_/)
      }
    })

    it('When a holder revokes their own token, then key.leaked says so, with the report holder and no place', async () => {
      const { storage, receiver, secret, clock } = await subject({ events: ['key.leaked'] })
      const key = await issueKey(storage, { plan: 'free', name: 'mine', perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now() })

      await reportToken(storage, { token: key.token, report: HOLDER_REPORT, url: null, source: null }, clock.now())
      await arrived(receiver, 1, 'the leak')

      const [payload] = receiver.received.map((delivery) => verify(secret, delivery))
      assert.equal(payload?.type, 'key.leaked')
      assert.deepEqual(payload?.data.leak, { reportedAt: new Date(clock.ms).toISOString(), report: 'holder', url: null, source: null })
    })

    it('When a delivery\'s body is changed, or its timestamp is old, then standardwebhooks refuses it', async () => {
      // Arrange: a dispatcher whose clock is ten minutes behind signs with an old timestamp.
      const fresh = await subject({ events: ['pet.created'] })
      const old = await subject({ events: ['pet.created'], clockOffsetMs: -10 * 60_000 })
      await fresh.storage.createPet(buildPetRecord({ name: 'a', categoryId: 1n, status: 'sold' }))
      await old.storage.createPet(buildPetRecord({ name: 'b', categoryId: 1n, status: 'sold' }))
      await arrived(fresh.receiver, 1, 'the fresh delivery')
      await arrived(old.receiver, 1, 'the old delivery')
      const delivery = fresh.receiver.received[0]
      assert.ok(delivery !== undefined)

      // Act and assert
      assert.equal(verify(fresh.secret, delivery).type, 'pet.created')
      assert.throws(() => verify(fresh.secret, { ...delivery, body: delivery.body.replace('"sold"', '"available"') }), /signature/i)
      assert.throws(() => verify(old.secret, old.receiver.received[0] as typeof delivery), /timestamp/i)
      assert.throws(() => verify(old.secret, delivery), /signature/i)
    })

    it('When the receiver answers 500 and then 200, then the retry carries the same webhook-id, and nothing follows', async () => {
      // Arrange
      const { storage, receiver, clock, secret, endpointId } = await subject({ events: ['pet.created'] })
      receiver.answers.push(500, 200)

      // Act
      await storage.createPet(buildPetRecord({ name: 'again', categoryId: 2n, status: 'pending' }))
      await arrived(receiver, 1, 'the first attempt')
      clock.ms += 31_000
      await arrived(receiver, 2, 'the retry')
      clock.ms += 3_600_000
      await new Promise((resolve) => setTimeout(resolve, 600))

      // Assert
      assert.equal(receiver.received.length, 2)
      assert.equal(receiver.ids().size, 1)
      for (const delivery of receiver.received) assert.equal(verify(secret, delivery).type, 'pet.created')
      const [listed] = await listDeliveries(storage, endpointId, null, 10)
      assert.deepEqual({ ...listed, eventCreatedAt: undefined },
        { webhookId: receiver.received[0]?.headers['webhook-id'], type: 'pet.created', eventCreatedAt: undefined, state: 'succeeded', attempts: 2, lastStatus: 200, lastError: null, nextAttemptAt: null })
    })

    for (const status of [410, 400]) {
      it(`When the receiver answers ${status}, then the delivery is final: no retry follows, however long`, async () => {
        // Arrange
        const { storage, receiver, clock, endpointId } = await subject({ events: ['pet.created'] })
        receiver.answers.push(status, status)

        // Act
        await storage.createPet(buildPetRecord({ name: 'once', categoryId: 3n, status: 'pending' }))
        await arrived(receiver, 1, 'the attempt')
        clock.ms += 24 * 3_600_000
        await new Promise((resolve) => setTimeout(resolve, 600))

        // Assert
        assert.equal(receiver.received.length, 1)
        const [listed] = await listDeliveries(storage, endpointId, null, 10)
        assert.deepEqual([listed?.state, listed?.attempts, listed?.lastStatus, listed?.nextAttemptAt], ['failed', 1, status, null])
        assert.match(listed?.lastError ?? '', new RegExp(`^HTTP ${status}`))
      })
    }

    it('When an endpoint\'s name resolves to loopback and private addresses are not allowed, then nothing is sent to it, and the log says why', async () => {
      // Arrange: made with the override, delivered without it; localhost is a name, checked only once resolved.
      const { storage, receiver, logLines } = await subject({ events: ['pet.created'], url: (r) => r.url.replace('http://127.0.0.1', 'https://localhost'), allowPrivate: false })

      // Act
      await storage.createPet(buildPetRecord({ name: 'never', categoryId: 4n, status: 'pending' }))
      await pollUntil(async () => logLines.some((line) => line.includes('not a public address')) ? true : undefined, { ms: 10_000, every: 50, what: 'the refusal in the log' })

      // Assert
      assert.equal(receiver.received.length, 0)
    })
  })
}
