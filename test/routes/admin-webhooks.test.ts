// The admin API's webhook endpoints (docs/WEBHOOKS.md: Managing endpoints),
// through `inject`, on both configurations: each operation's answer, the
// secret shown once, paging, the URLs refused without WEBHOOK_ALLOW_PRIVATE,
// 404s. Every answer is checked against the admin OpenAPI document as served.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { OpenApiChecker, injectChecked } from '../support/openapi-check.js'
import { bearer, buildPetRecord } from '../support/fixtures.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'
const WEBHOOK_FIELDS = ['createdAt', 'description', 'disabledAt', 'disabledReason', 'enabled', 'events', 'id', 'previousSecretExpiresAt', 'updatedAt', 'url']

for (const configuration of CONFIGURATIONS) {
  describe(`the admin API's webhook endpoints (${configuration.name})`, () => {
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker

    before(async () => {
      t = await buildTestApp({}, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production' }, now: t.clock.now })
      await admin.ready()
      const document = await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })
      checker = new OpenApiChecker(document.body)
    })
    after(async () => {
      await admin.close()
      await t.close()
    })

    const call = async (options: InjectOptions & { url: string }): Promise<LightMyRequestResponse> => await injectChecked(admin, checker, options)
    const send = async (method: 'POST' | 'PATCH', url: string, body: unknown): Promise<LightMyRequestResponse> =>
      await call({ method, url, headers: jsonHeaders(ADMIN_TOKEN), payload: JSON.stringify(body) })
    const get = async (url: string): Promise<LightMyRequestResponse> => await call({ url, headers: bearer(ADMIN_TOKEN) })

    it('When an endpoint is made, then 201 answers it with a whsec_ secret of 32 random bytes, shown in that answer only', async () => {
      // Act
      const made = await send('POST', '/admin/v1/webhooks', { url: 'https://hooks.example.com/petstore', events: ['pet.created'], description: 'partner' })
      const read = await get(`/admin/v1/webhooks/${made.json<{ id: number }>().id}`)

      // Assert
      assert.equal(made.statusCode, 201)
      const body = made.json<Record<string, unknown>>()
      assert.match(String(body.secret), /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.equal(Buffer.from(String(body.secret).slice(6), 'base64').length, 32)
      assert.deepEqual({ url: body.url, events: body.events, description: body.description, enabled: body.enabled },
        { url: 'https://hooks.example.com/petstore', events: ['pet.created'], description: 'partner', enabled: true })
      assert.equal(read.statusCode, 200)
      assert.deepEqual(Object.keys(read.json()).sort(), WEBHOOK_FIELDS)
    })

    it('When an endpoint is made without events, then it takes every type (events: null), and PATCH changes and disables it', async () => {
      // Arrange
      const { id } = (await send('POST', '/admin/v1/webhooks', { url: 'https://all.example.com/' })).json<{ id: number }>()

      // Act
      const changed = await send('PATCH', `/admin/v1/webhooks/${id}`, { enabled: false, events: ['key.revoked', 'key.created'], description: 'off' })
      const cleared = await send('PATCH', `/admin/v1/webhooks/${id}`, { events: null })

      // Assert
      assert.equal(changed.statusCode, 200)
      assert.deepEqual(changed.json<Record<string, unknown>>().events, ['key.revoked', 'key.created'])
      assert.equal(changed.json<Record<string, unknown>>().enabled, false)
      assert.equal(cleared.json<Record<string, unknown>>().events, null)
      assert.equal(cleared.json<Record<string, unknown>>().description, 'off')
    })

    it('When a URL is loopback, metadata, private, http, unparseable or carries credentials, then 400 names body.url, without WEBHOOK_ALLOW_PRIVATE', async () => {
      for (const url of [
        'https://127.0.0.1/hook', 'https://169.254.169.254/latest', 'https://10.1.2.3/', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/',
        'https://100.64.0.1/', 'https://0.0.0.0/', 'https://2130706433/', 'http://hooks.example.com/', 'not a url', 'https://user:pw@hooks.example.com/'
      ]) {
        // Act
        const refused = await send('POST', '/admin/v1/webhooks', { url })

        // Assert
        assert.equal(refused.statusCode, 400, url)
        assert.equal(errorOf(refused).details?.[0]?.field, 'body.url', url)
      }
      const patched = await send('PATCH', '/admin/v1/webhooks/1', { url: 'https://127.0.0.1/' })
      assert.equal(patched.statusCode, 400)
    })

    it('When an event type is unknown, then 400 names body.events', async () => {
      const refused = await send('POST', '/admin/v1/webhooks', { url: 'https://hooks.example.com/', events: ['pet.eaten'] })
      assert.equal(refused.statusCode, 400)
      assert.match(errorOf(refused).details?.[0]?.field ?? '', /^body\.events/)
    })

    it('When endpoints are listed a page at a time, then Link leads to the next page, and every endpoint is seen once', async () => {
      // Arrange
      for (let i = 0; i < 3; i++) await send('POST', '/admin/v1/webhooks', { url: `https://page${i}.example.com/` })
      const seen: number[] = []

      // Act
      let url: string | undefined = '/admin/v1/webhooks?limit=2'
      while (url !== undefined) {
        const page = await get(url)
        assert.equal(page.statusCode, 200)
        seen.push(...page.json<Array<{ id: number, secret?: string }>>().map((w) => { assert.equal(w.secret, undefined); return w.id }))
        url = /^<([^>]+)>; rel="next"$/.exec(String(page.headers.link ?? ''))?.[1]
      }

      // Assert
      assert.ok(seen.length >= 3)
      assert.deepEqual(seen, [...seen].sort((a, b) => a - b))
      assert.equal(new Set(seen).size, seen.length)
    })

    it('When an endpoint\'s deliveries are listed, then 200 with its deliveries, newest first; 404 for an endpoint that does not exist', async () => {
      // Arrange: two animals, whose events the endpoint wants; no dispatcher runs here, so they wait.
      const { id } = (await send('POST', '/admin/v1/webhooks', { url: 'https://deliveries.example.com/', events: ['pet.created'] })).json<{ id: number }>()
      await t.storage.createPet(buildPetRecord({ name: 'one', categoryId: 1n, status: 'available' }))
      await t.storage.createPet(buildPetRecord({ name: 'two', categoryId: 1n, status: 'available' }))
      await t.storage.fanOutEvents(100, t.clock.now())

      // Act
      const first = await get(`/admin/v1/webhooks/${id}/deliveries?limit=1`)
      const next = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link ?? ''))?.[1]
      const second = await get(next ?? '')
      const missing = await get('/admin/v1/webhooks/999999/deliveries')

      // Assert
      assert.equal(first.statusCode, 200)
      const [newer] = first.json<Array<{ webhookId: string, state: string, attempts: number, nextAttemptAt: string | null }>>()
      const [older] = second.json<Array<{ webhookId: string }>>()
      assert.equal(newer?.state, 'pending')
      assert.equal(newer?.attempts, 0)
      assert.ok(newer?.nextAttemptAt !== null)
      assert.ok(Number(newer?.webhookId.slice(4)) > Number(older?.webhookId.slice(4)))
      assert.equal(missing.statusCode, 404)
    })

    it('When an endpoint is deleted, then it answers it once, and 404 after', async () => {
      // Arrange
      const { id } = (await send('POST', '/admin/v1/webhooks', { url: 'https://gone.example.com/' })).json<{ id: number }>()

      // Act
      const removed = await call({ method: 'DELETE', url: `/admin/v1/webhooks/${id}`, headers: bearer(ADMIN_TOKEN) })
      const again = await call({ method: 'DELETE', url: `/admin/v1/webhooks/${id}`, headers: bearer(ADMIN_TOKEN) })
      const read = await get(`/admin/v1/webhooks/${id}`)

      // Assert
      assert.equal(removed.statusCode, 200)
      assert.equal(again.statusCode, 404)
      assert.equal(read.statusCode, 404)
      assert.equal(errorOf(read).message, `No webhook endpoint has the id ${id}.`)
    })
  })
}

describe('the admin API\'s webhook endpoints, with WEBHOOK_ALLOW_PRIVATE', () => {
  it('When private addresses are allowed, then http:// and 127.0.0.1 are taken', async () => {
    // Arrange
    const t = await buildTestApp()
    const admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production', webhookAllowPrivate: true }, now: t.clock.now })
    try {
      // Act
      const made = await admin.inject({ method: 'POST', url: '/admin/v1/webhooks', headers: jsonHeaders(ADMIN_TOKEN), payload: JSON.stringify({ url: 'http://127.0.0.1:9/hook' }) })

      // Assert
      assert.equal(made.statusCode, 201)
    } finally {
      await admin.close()
      await t.close()
    }
  })
})
