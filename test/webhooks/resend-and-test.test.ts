// Operators' actions on deliveries (docs/WEBHOOKS.md: Managing endpoints), on
// both backends, through the admin API: a succeeded or failed delivery sent
// again under the same webhook-id, and a test event to one endpoint alone,
// each arriving at a real receiver and verified by `standardwebhooks`. Every
// answer is checked against the admin OpenAPI document as served.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import pino from 'pino'
import { buildAdminApp } from '../../src/http/admin.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPetRecord } from '../support/fixtures.js'
import { OpenApiChecker, injectChecked } from '../support/openapi-check.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver, verify, type Received } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'

interface DeliveryJson { webhookId: string, type: string, state: string, attempts: number, lastStatus: number | null, nextAttemptAt: string | null }

for (const configuration of CONFIGURATIONS) {
  describe(`resending deliveries and test events (${configuration.name})`, () => {
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker
    let dispatcher: Dispatcher
    const receivers: WebhookReceiver[] = []

    before(async () => {
      t = await buildTestApp({}, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production', webhookAllowPrivate: true }, now: Date.now })
      await admin.ready()
      checker = new OpenApiChecker((await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })).body)
      dispatcher = new Dispatcher({ storage: t.storage, logger: pino({ level: 'silent' }), allowPrivate: true })
      dispatcher.start()
    })
    after(async () => {
      await dispatcher.stop()
      for (const receiver of receivers) await receiver.close()
      await admin.close()
      await t.close()
    })

    const call = async (options: InjectOptions & { url: string }): Promise<LightMyRequestResponse> => await injectChecked(admin, checker, options)
    const post = async (url: string, body?: unknown): Promise<LightMyRequestResponse> => await call({
      method: 'POST', url, ...(body === undefined ? { headers: bearer(ADMIN_TOKEN) } : { headers: jsonHeaders(ADMIN_TOKEN), payload: JSON.stringify(body) })
    })
    const deliveries = async (id: number): Promise<DeliveryJson[]> => (await call({ url: `/admin/v1/webhooks/${id}/deliveries`, headers: bearer(ADMIN_TOKEN) })).json<DeliveryJson[]>()

    /** A receiver, and an endpoint to it for the types given. */
    async function endpoint (events?: string[]): Promise<{ receiver: WebhookReceiver, id: number, secret: string }> {
      const receiver = await new WebhookReceiver().listen()
      receivers.push(receiver)
      const made = await post('/admin/v1/webhooks', { url: receiver.url, ...(events === undefined ? {} : { events }) })
      assert.equal(made.statusCode, 201, made.body)
      const { id, secret } = made.json<{ id: number, secret: string }>()
      return { receiver, id, secret }
    }

    const settled = async (id: number, webhookId: string): Promise<DeliveryJson> => await pollUntil(async () => {
      const found = (await deliveries(id)).find((d) => d.webhookId === webhookId)
      return found !== undefined && found.state !== 'pending' ? found : undefined
    }, { ms: 10_000, every: 50, what: `${webhookId} settled` })

    it('When a failed delivery is resent, then 202 answers it pending, and it arrives again with the same webhook-id, verified, as a new attempt', async () => {
      // Arrange: a receiver that says 410 (final), then takes the resend.
      const { receiver, id, secret } = await endpoint(['pet.created'])
      receiver.answers.push(410)
      await t.storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))
      await pollUntil(async () => receiver.received.length >= 1 ? true : undefined, { ms: 10_000, every: 50, what: 'the first attempt' })
      const first = receiver.received[0]
      assert.ok(first !== undefined)
      const webhookId = String(first.headers['webhook-id'])
      const failed = await settled(id, webhookId)

      // Act
      const resent = await post(`/admin/v1/webhooks/${id}/deliveries/${webhookId}/resend`)
      await pollUntil(async () => receiver.received.length >= 2 ? true : undefined, { ms: 10_000, every: 50, what: 'the resend' })
      const succeeded = await settled(id, webhookId)

      // Assert
      assert.equal(failed.state, 'failed')
      assert.equal(resent.statusCode, 202, resent.body)
      assert.equal(resent.json<DeliveryJson>().state, 'pending')
      assert.equal(resent.json<DeliveryJson>().webhookId, webhookId)
      const again = receiver.received[1]
      assert.ok(again !== undefined)
      assert.equal(again.headers['webhook-id'], webhookId)
      assert.equal(again.body, first.body)
      assert.equal(verify(secret, again).type, 'pet.created')
      assert.deepEqual([succeeded.state, succeeded.attempts, succeeded.lastStatus], ['succeeded', 2, 204])
    })

    it('When a succeeded delivery is resent, then it arrives again; a pending one is refused 409 delivery_pending; an unknown one 404', async () => {
      // Arrange
      const { receiver, id, secret } = await endpoint(['key.created'])
      const other = await endpoint(['key.created'])
      receiver.answers.push(204)
      await t.newKey()
      await pollUntil(async () => receiver.received.length >= 1 ? true : undefined, { ms: 10_000, every: 50, what: 'the delivery' })
      const webhookId = String(receiver.received[0]?.headers['webhook-id'])
      await settled(id, webhookId)
      // The other endpoint is disabled before it is resent to: its resend waits, pending.
      await settled(other.id, webhookId)
      assert.equal((await call({ method: 'PATCH', url: `/admin/v1/webhooks/${other.id}`, headers: jsonHeaders(ADMIN_TOKEN), payload: '{"enabled":false}' })).statusCode, 200)
      assert.equal((await post(`/admin/v1/webhooks/${other.id}/deliveries/${webhookId}/resend`)).statusCode, 202)

      // Act
      const resent = await post(`/admin/v1/webhooks/${id}/deliveries/${webhookId}/resend`)
      await pollUntil(async () => receiver.received.length >= 2 ? true : undefined, { ms: 10_000, every: 50, what: 'the resend' })
      const pending = await post(`/admin/v1/webhooks/${other.id}/deliveries/${webhookId}/resend`)
      const unknown = await post(`/admin/v1/webhooks/${id}/deliveries/evt_99999999/resend`)
      const noEndpoint = await post(`/admin/v1/webhooks/99999999/deliveries/${webhookId}/resend`)
      const malformed = await post(`/admin/v1/webhooks/${id}/deliveries/99/resend`)

      // Assert
      assert.equal(resent.statusCode, 202)
      assert.equal(verify(secret, receiver.received[1] as Received).type, 'key.created')
      assert.equal(receiver.received[1]?.headers['webhook-id'], webhookId)
      assert.equal(pending.statusCode, 409)
      assert.equal(errorOf(pending).code, 'delivery_pending')
      assert.equal(unknown.statusCode, 404)
      assert.match(errorOf(unknown).message, /has no delivery of evt_99999999/)
      assert.equal(noEndpoint.statusCode, 404)
      assert.equal(malformed.statusCode, 400)
      assert.equal(other.receiver.received.length, 1, 'the disabled endpoint was sent its resend')
    })

    it('When a test event is sent to an endpoint, then it alone receives a verified webhook.test, whatever types it asked for, and its deliveries list it', async () => {
      // Arrange: two endpoints for every type, one for pet.created only.
      const target = await endpoint(['pet.created'])
      const bystander = await endpoint()

      // Act
      const sent = await post(`/admin/v1/webhooks/${target.id}/test`)
      await pollUntil(async () => target.receiver.received.length >= 1 ? true : undefined, { ms: 10_000, every: 50, what: 'the test event' })
      const missing = await post('/admin/v1/webhooks/99999999/test')

      // Assert
      assert.equal(sent.statusCode, 202, sent.body)
      const delivery = sent.json<DeliveryJson>()
      assert.deepEqual([delivery.type, delivery.state, delivery.attempts], ['webhook.test', 'pending', 0])
      const payload = verify(target.secret, target.receiver.received[0] as Received)
      assert.equal(payload.type, 'webhook.test')
      assert.equal(payload.data.endpointId, target.id)
      assert.equal(target.receiver.received[0]?.headers['webhook-id'], delivery.webhookId)
      const listed = await settled(target.id, delivery.webhookId)
      assert.equal(listed.state, 'succeeded')
      await new Promise((resolve) => setTimeout(resolve, 400))
      assert.equal(bystander.receiver.received.length, 0, 'another endpoint received the test event')
      assert.equal(missing.statusCode, 404)
    })
  })
}
