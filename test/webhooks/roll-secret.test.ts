// Rolling an endpoint's signing secret (docs/WEBHOOKS.md: Rolling a secret),
// on both backends, through the admin API: during the overlap each delivery
// carries one `v1,` signature per live secret, and a receiver holding either
// secret verifies it with `standardwebhooks`; after it, or with no overlap,
// only the new one does. Every answer is checked against the admin OpenAPI
// document as served.
import { after, before, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import pino from 'pino'
import { buildAdminApp } from '../../src/http/admin.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { CONFIGURATIONS, buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { OpenApiChecker, injectChecked } from '../support/openapi-check.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver, verify, type Received } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'

/**
 * `verify` as a receiver whose clock reads `ms`: the dispatcher signs on the
 * tests' clock, which passes an overlap's end without waiting, and the
 * library refuses timestamps five minutes from its own.
 */
function verifyAt (ms: number, secret: string, delivery: Received): ReturnType<typeof verify> {
  mock.timers.enable({ apis: ['Date'], now: ms })
  try {
    return verify(secret, delivery)
  } finally {
    mock.timers.reset()
  }
}

interface Rolled { id: number, secret: string, previousSecretExpiresAt: string | null }

for (const configuration of CONFIGURATIONS) {
  describe(`rolling a webhook secret (${configuration.name})`, () => {
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker
    let dispatcher: Dispatcher
    const clock = { ms: Date.now() }
    const receivers: WebhookReceiver[] = []

    before(async () => {
      t = await buildTestApp({}, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production', webhookAllowPrivate: true }, now: () => clock.ms })
      await admin.ready()
      checker = new OpenApiChecker((await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })).body)
      // The dispatcher signs on the same clock as the roll, so that the overlap's end can be passed without waiting.
      dispatcher = new Dispatcher({ storage: t.storage, logger: pino({ level: 'silent' }), allowPrivate: true, now: () => clock.ms })
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

    /** A test event sent to the endpoint, as it arrived. */
    async function delivered (receiver: WebhookReceiver, id: number): Promise<Received> {
      const count = receiver.received.length
      assert.equal((await post(`/admin/v1/webhooks/${id}/test`)).statusCode, 202)
      await pollUntil(async () => receiver.received.length > count ? true : undefined, { ms: 10_000, every: 50, what: 'the test event' })
      return receiver.received[count] as Received
    }

    it('When a secret is rolled with an overlap, then deliveries carry two v1 signatures and verify with either secret, until the overlap ends', async () => {
      // Arrange
      const receiver = await new WebhookReceiver().listen()
      receivers.push(receiver)
      const made = await post('/admin/v1/webhooks', { url: receiver.url, events: ['pet.created'] })
      const { id, secret: first } = made.json<{ id: number, secret: string }>()

      // Act
      const rolled = await post(`/admin/v1/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: 3600 })
      const { secret: second, previousSecretExpiresAt } = rolled.json<Rolled>()
      const during = await delivered(receiver, id)
      const duringAt = clock.ms
      const shown = (await call({ url: `/admin/v1/webhooks/${id}`, headers: bearer(ADMIN_TOKEN) })).json<Rolled>()
      clock.ms += 3600_000 + 1000
      const afterOverlap = await delivered(receiver, id)

      // Assert
      assert.equal(rolled.statusCode, 201, rolled.body)
      assert.match(second, /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.notEqual(second, first)
      assert.equal(previousSecretExpiresAt, new Date(Date.parse(previousSecretExpiresAt ?? '')).toISOString())
      assert.equal(shown.previousSecretExpiresAt, previousSecretExpiresAt)
      assert.equal((shown as { secret?: string }).secret, undefined)
      const signatures = String(during.headers['webhook-signature']).split(' ')
      assert.equal(signatures.length, 2)
      for (const signature of signatures) assert.match(signature, /^v1,[A-Za-z0-9+/]{43}=$/)
      // Either secret, as a receiver holding only one of them.
      assert.equal(verifyAt(duringAt, first, during).type, 'webhook.test')
      assert.equal(verifyAt(duringAt, second, during).type, 'webhook.test')
      assert.equal(String(afterOverlap.headers['webhook-signature']).split(' ').length, 1)
      assert.equal(verifyAt(clock.ms, second, afterOverlap).type, 'webhook.test')
      assert.throws(() => verifyAt(clock.ms, first, afterOverlap), /signature/i)
    })

    it('When a secret is rolled with no overlap, or rolled again during one, then only the newest secret, and the one just before it, can verify', async () => {
      // Arrange
      const receiver = await new WebhookReceiver().listen()
      receivers.push(receiver)
      const { id, secret: first } = (await post('/admin/v1/webhooks', { url: receiver.url })).json<{ id: number, secret: string }>()

      // Act
      const { secret: second } = (await post(`/admin/v1/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: 600 })).json<Rolled>()
      const again = (await post(`/admin/v1/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: 600 })).json<Rolled>()
      const twice = await delivered(receiver, id)
      const atOnce = (await post(`/admin/v1/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: 0 })).json<Rolled>()
      const alone = await delivered(receiver, id)
      const tooLong = await post(`/admin/v1/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: 604_801 })
      const missing = await post('/admin/v1/webhooks/99999999/roll-secret', { expireCurrentInSeconds: 0 })

      // Assert
      assert.equal(String(twice.headers['webhook-signature']).split(' ').length, 2)
      assert.equal(verifyAt(clock.ms, again.secret, twice).type, 'webhook.test')
      assert.equal(verifyAt(clock.ms, second, twice).type, 'webhook.test')
      assert.throws(() => verifyAt(clock.ms, first, twice), /signature/i)
      assert.equal(atOnce.previousSecretExpiresAt, null)
      assert.equal(String(alone.headers['webhook-signature']).split(' ').length, 1)
      assert.equal(verifyAt(clock.ms, atOnce.secret, alone).type, 'webhook.test')
      assert.throws(() => verifyAt(clock.ms, again.secret, alone), /signature/i)
      assert.equal(tooLong.statusCode, 400)
      assert.equal(missing.statusCode, 404)
    })
  })
}
