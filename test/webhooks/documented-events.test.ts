// The events as the OpenAPI documents describe them (docs/WEBHOOKS.md): real
// deliveries of every type, made by the service's own changes, announcements
// and test events and sent by a Dispatcher to a receiver on 127.0.0.1, each
// fit the body of its type's webhook in the admin document (and, for
// pet.created and webhook.test, in the public one), checked by the same
// validator as the API's answers. And the typed client's verifyWebhook
// verifies what the service sent, ids past 2^53 exact.
import { after, afterEach, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { UnknownWebhookEventError, verifyWebhook } from 'petstore-client'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { EVENT_TYPES, TEST_EVENT_TYPE } from '../../src/domain.js'
import { buildAdminApp } from '../../src/http/admin.js'
import { DAY_MS } from '../../src/instant.js'
import { announceExpiries, createQuotaAnnouncer } from '../../src/keys/announcements.js'
import { reportToken } from '../../src/keys/leaks.js'
import { issueKey, revokeKey, rollKey, updateKey } from '../../src/keys/manage.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook, sendTestEvent } from '../../src/webhooks/manage.js'
import { buildTestApp } from '../support/app.js'
import { bearer, buildPetRecord } from '../support/fixtures.js'
import { OpenApiChecker } from '../support/openapi-check.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'
/** Past 2^53: a JSON.parse would read it as 9007199254740992. */
const BIG = 9007199254740993n

class Clock {
  ms = Date.now()
  now = (): number => this.ms
}

describe('delivered events and the OpenAPI documents', () => {
  let publicChecker: OpenApiChecker
  let adminChecker: OpenApiChecker
  let storage: Storage
  let receiver: WebhookReceiver
  let dispatcher: Dispatcher
  const clock = new Clock()

  before(async () => {
    const app = await buildTestApp()
    publicChecker = new OpenApiChecker((await app.app.inject({ url: '/v1/openapi.json' })).body)
    await app.close()
    const adminStorage = openSqlite('sqlite::memory:')
    const admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: adminStorage, environment: 'production' } })
    adminChecker = new OpenApiChecker((await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })).body)
    await admin.close()
    await adminStorage.close()
  })

  /** A store, a receiver, an endpoint to it for every type, and a dispatcher on the test's clock; the endpoint's secret and id. */
  async function start (): Promise<{ secret: string, endpointId: number }> {
    storage = openSqlite('sqlite::memory:')
    receiver = await new WebhookReceiver().listen()
    const { secret, id } = await createWebhook(storage, { url: receiver.url, events: undefined, description: undefined, now: clock.now() }, { allowPrivate: true })
    dispatcher = new Dispatcher({ storage, logger: pino({ level: 'silent' }), allowPrivate: true, now: clock.now })
    dispatcher.start()
    return { secret, endpointId: id }
  }

  afterEach(async () => {
    await dispatcher.stop()
    await receiver.close()
    await storage.close()
  })
  after(() => {})

  const typeOf = (body: string): string => (JSON.parse(body) as { type: string }).type
  const arrivedTypes = async (types: readonly string[]): Promise<void> => {
    await pollUntil(async () => types.every((type) => receiver.received.some((d) => typeOf(d.body) === type)) ? true : undefined,
      { ms: 15_000, every: 50, what: `deliveries of ${types.join(', ')}` })
  }

  it('When events of every type are made and delivered, then each body fits its type\'s webhook in the admin document, and pet.created and webhook.test fit the public one', async () => {
    // Arrange
    const { endpointId } = await start()
    const make = async (name: string, expiresAt?: number): Promise<number> => (await issueKey(storage, {
      plan: 'free', name, perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now(), ...(expiresAt === undefined ? {} : { expiresAt })
    })).id

    // Act: a change of every kind, quota levels, expiries and a test event.
    await storage.createPet(buildPetRecord({ name: 'Rex "the dog"', categoryId: BIG, status: 'available' }))
    const key = await make('partner')
    await updateKey(storage, key, { name: 'renamed' }, clock.now())
    await rollKey(storage, key, 60, clock.now())
    await revokeKey(storage, key, clock.now())
    const leaky = await issueKey(storage, { plan: 'free', name: 'leaky', perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now() })
    await reportToken(storage, { token: leaky.token, report: `github:${'ab'.repeat(32)}`, url: 'https://github.com/octocat/Hello-World/blob/main/.env', source: 'content' }, clock.now())
    const busy = await make('busy')
    const errors: unknown[] = []
    const quota = createQuotaAnnouncer(storage, (error) => { errors.push(error) })
    quota({ keyId: busy, level: 'warning', limit: 1000, used: 800, at: clock.now() })
    quota({ keyId: busy, level: 'exhausted', limit: 1000, used: 1003, at: clock.now() })
    await make('expiring', clock.now() + 3 * DAY_MS)
    await make('expired', clock.now() + 1000)
    clock.ms += 2000
    await announceExpiries(storage, clock.now())
    await sendTestEvent(storage, endpointId, clock.now())
    await arrivedTypes([...EVENT_TYPES, TEST_EVENT_TYPE])

    // Assert
    assert.deepEqual(errors, [])
    for (const { body } of receiver.received) {
      const type = typeOf(body)
      assert.deepEqual(adminChecker.checkEvent(type, body), [], `admin document, ${type}`)
      if (type === 'pet.created' || type === TEST_EVENT_TYPE) assert.deepEqual(publicChecker.checkEvent(type, body), [], `public document, ${type}`)
      else assert.notDeepEqual(publicChecker.checkEvent(type, body), [], `${type} is not the public document's`)
    }
    assert.match(receiver.received.find((d) => typeOf(d.body) === 'pet.created')?.body ?? '', new RegExp(`"categoryId":${BIG}`))
  })

  it('When the service delivers pet.created and webhook.test, then the client\'s verifyWebhook verifies them and yields typed events, the categoryId past 2^53 exact; a key event verifies as one it does not describe', async () => {
    // Arrange
    const { secret, endpointId } = await start()

    // Act
    const pet = await storage.createPet(buildPetRecord({ name: 'Big', categoryId: BIG, status: 'pending' }))
    await sendTestEvent(storage, endpointId, clock.now())
    await issueKey(storage, { plan: 'free', name: 'operators', perMinute: undefined, perDay: undefined, environment: 'production', now: clock.now() })
    await arrivedTypes(['pet.created', TEST_EVENT_TYPE, 'key.created'])
    const delivery = (type: string): { headers: Record<string, string | string[] | undefined>, body: string } => {
      const found = receiver.received.find((d) => typeOf(d.body) === type)
      assert.ok(found, type)
      return found
    }
    const petEvent = verifyWebhook(secret, delivery('pet.created').body, delivery('pet.created').headers)
    const testEvent = verifyWebhook(secret, delivery(TEST_EVENT_TYPE).body, delivery(TEST_EVENT_TYPE).headers)

    // Assert
    assert.equal(petEvent.type, 'pet.created')
    if (petEvent.type === 'pet.created') {
      assert.equal(petEvent.data.categoryId, BIG)
      assert.equal(petEvent.data.id, pet.id)
      assert.equal(petEvent.data.name, 'Big')
    }
    assert.equal(testEvent.type, TEST_EVENT_TYPE)
    if (testEvent.type === TEST_EVENT_TYPE) assert.equal(testEvent.data.endpointId, endpointId)
    assert.throws(() => verifyWebhook(secret, delivery('key.created').body, delivery('key.created').headers),
      (error) => error instanceof UnknownWebhookEventError && error.type === 'key.created')
  })
})
