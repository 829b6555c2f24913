// The admin API (docs/KEYS.md: The admin API), through `inject`, on both
// configurations: each operation's answer and its shape, its refusals
// (404, 409, 400 with details), paging, tracing a token, who may call it,
// and that what it changes holds at the public port's gate. Every answer
// of the admin app is checked against the admin OpenAPI document as it
// is served.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import type { KeyView } from '../../src/keys/manage.js'
import { generateToken } from '../../src/keys/tokens.js'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { OpenApiChecker, injectChecked, receivedOf } from '../support/openapi-check.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'
const KEY_FIELDS = [
  'concurrency', 'createdAt', 'environment', 'expiresAt', 'id', 'lastUsedAt', 'leak', 'name', 'perDay', 'perMinute', 'plan',
  'previousTokenExpiresAt', 'revoked', 'revokedAt', 'scopes', 'tokenHint'
]
const TOKEN = /^pet_live_[0-9A-Za-z]{36}$/
/** Longer than the gate's lookup cache: a change made before is seen after. */
const PAST_THE_CACHE_MS = 600

/** A key as the admin API answers it: the operators' view, and its token where one is shown. */
type KeyBody = KeyView & { token?: string }

for (const configuration of CONFIGURATIONS) {
  describe(`the admin API (${configuration.name})`, () => {
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker

    before(async () => {
      t = await buildTestApp({}, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production' }, now: t.clock.now })
      await admin.ready()
      const document = await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })
      assert.equal(document.statusCode, 200)
      checker = new OpenApiChecker(document.body)
    })
    after(async () => {
      await admin.close()
      await t.close()
    })

    /** An admin request, its answer checked against the admin document. */
    async function call (options: InjectOptions & { url: string }, app: FastifyInstance = admin): Promise<LightMyRequestResponse> {
      return await injectChecked(app, checker, options)
    }
    const admitted = jsonHeaders(ADMIN_TOKEN)
    const post = async (url: string, body: unknown): Promise<LightMyRequestResponse> =>
      await call({ method: 'POST', url, headers: admitted, payload: typeof body === 'string' ? body : JSON.stringify(body) })
    const patch = async (id: number, body: unknown): Promise<LightMyRequestResponse> =>
      await call({ method: 'PATCH', url: `/admin/v1/keys/${id}`, headers: admitted, payload: typeof body === 'string' ? body : JSON.stringify(body) })
    const create = async (body: Record<string, unknown> = { plan: 'free' }): Promise<KeyBody> => {
      const response = await post('/admin/v1/keys', body)
      assert.equal(response.statusCode, 201, response.body)
      return response.json()
    }
    const iso = (ms: number): string => new Date(ms).toISOString()

    /** A 400 invalid_request whose details name `field`. */
    function assertRefused (response: LightMyRequestResponse, field: string): void {
      assert.equal(response.statusCode, 400, response.body)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_request')
      assert.ok(Array.isArray(error.details) && error.details.length > 0, `no details: ${response.body}`)
      assert.ok(error.details.some((d) => d.field === field), `details do not name ${field}: ${response.body}`)
    }

    describe('each operation', () => {
      it('When a key is made with only a plan, then 201 with the key, its defaults and its token, shown once', async () => {
        // Act
        const response = await post('/admin/v1/keys', { plan: 'free' })

        // Assert
        assert.equal(response.statusCode, 201)
        const key = response.json() as KeyBody
        assert.deepEqual(Object.keys(key).sort(), [...KEY_FIELDS, 'token'].sort())
        assert.match(key.token ?? '', TOKEN)
        assert.equal(key.tokenHint, `pet_live_…${(key.token ?? '').slice(-4)}`)
        assert.deepEqual({ ...key, id: 0, token: '', tokenHint: '' }, {
          id: 0,
          name: '',
          plan: 'free',
          perMinute: 60,
          perDay: 1000,
          concurrency: 5,
          scopes: ['pets:read', 'pets:write'],
          environment: 'production',
          tokenHint: '',
          createdAt: iso(t.clock.now()),
          expiresAt: null,
          lastUsedAt: null,
          leak: null,
          revoked: false,
          revokedAt: null,
          previousTokenExpiresAt: null,
          token: ''
        })
        const shown = await call({ url: `/admin/v1/keys/${key.id}`, headers: bearer(ADMIN_TOKEN) })
        assert.equal(shown.statusCode, 200)
        assert.equal(shown.body.includes(key.token ?? '?'), false, 'the token is shown again')
      })

      it('When an enterprise key is made with its limits, scopes, a name and an expiry, then 201 with each of them', async () => {
        // Arrange
        const expiresAt = iso(t.clock.now() + 86_400_000)

        // Act
        const key = await create({ plan: 'enterprise', name: 'shop front', perMinute: 7, perDay: 70, scopes: ['pets:read'], expiresAt })

        // Assert
        assert.deepEqual([key.plan, key.name, key.perMinute, key.perDay, key.scopes, key.expiresAt], ['enterprise', 'shop front', 7, 70, ['pets:read'], expiresAt])
      })

      it('When a key is read, then 200 with the key as made, without its token', async () => {
        // Arrange
        const { token, ...made } = await create({ plan: 'pro', name: 'reader' })

        // Act
        const response = await call({ url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })

        // Assert
        assert.equal(response.statusCode, 200)
        assert.deepEqual(response.json(), made)
        assert.ok(token !== undefined)
      })

      it('When a key is changed, then 200 with each field sent changed and the others kept; expiresAt null clears it', async () => {
        // Arrange
        const { token: _, ...made } = await create({ plan: 'free', name: 'before', expiresAt: iso(t.clock.now() + 3_600_000) })

        // Act
        const changed = await patch(made.id, { name: 'after', plan: 'enterprise', perMinute: 5, perDay: 50, scopes: ['pets:write'] })
        const cleared = await patch(made.id, { expiresAt: null })
        const back = await patch(made.id, { plan: 'business', perMinute: null, perDay: null })

        // Assert
        assert.equal(changed.statusCode, 200)
        assert.deepEqual(changed.json(), { ...made, name: 'after', plan: 'enterprise', perMinute: 5, perDay: 50, concurrency: 100, scopes: ['pets:write'] })
        assert.equal(cleared.statusCode, 200)
        assert.equal((cleared.json() as KeyBody).expiresAt, null)
        assert.equal((cleared.json() as KeyBody).name, 'after')
        assert.equal(back.statusCode, 200)
        assert.deepEqual([(back.json() as KeyBody).plan, (back.json() as KeyBody).perMinute, (back.json() as KeyBody).perDay], ['business', 1000, 100_000])
      })

      it('When a key is made with a cap of requests in flight, then 201 with it; changed, it holds across a plan change; null, it is the plan\'s and follows the plan', async () => {
        // Arrange
        const made = await create({ plan: 'pro', concurrency: 2 })

        // Act
        const raised = await patch(made.id, { concurrency: 7 })
        const otherPlan = await patch(made.id, { plan: 'business' })
        const back = await patch(made.id, { concurrency: null })
        const free = await patch(made.id, { plan: 'free' })
        const shown = await call({ url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })

        // Assert
        assert.equal(made.concurrency, 2)
        assert.deepEqual([raised, otherPlan, back, free, shown].map((answer) => answer.statusCode), [200, 200, 200, 200, 200])
        assert.deepEqual([raised, otherPlan, back, free, shown].map((answer) => (answer.json() as KeyBody).concurrency), [7, 7, 100, 5, 5])
      })

      it('When a key is rolled, then 201 with the same key, a new token and hint, and the old token\'s end', async () => {
        // Arrange
        const made = await create({ plan: 'pro', scopes: ['pets:read'] })

        // Act
        const response = await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 3600 })

        // Assert
        assert.equal(response.statusCode, 201)
        const rolled = response.json() as KeyBody
        assert.deepEqual(Object.keys(rolled).sort(), [...KEY_FIELDS, 'token'].sort())
        assert.match(rolled.token ?? '', TOKEN)
        assert.notEqual(rolled.token, made.token)
        assert.equal(rolled.tokenHint, `pet_live_…${(rolled.token ?? '').slice(-4)}`)
        assert.deepEqual([rolled.id, rolled.plan, rolled.scopes, rolled.createdAt], [made.id, 'pro', ['pets:read'], made.createdAt])
        assert.equal(rolled.previousTokenExpiresAt, iso(t.clock.now() + 3_600_000))
      })

      it('When a key is revoked twice, then both answers are the same key, revoked, with the first revokedAt', async () => {
        // Arrange
        const made = await create()
        const revokedAt = iso(t.clock.now())

        // Act
        const first = await call({ method: 'DELETE', url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })
        t.clock.advance(5_000)
        const second = await call({ method: 'DELETE', url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })

        // Assert
        assert.equal(first.statusCode, 200)
        assert.equal(second.statusCode, 200)
        const key = first.json() as KeyBody
        assert.deepEqual([key.revoked, key.revokedAt], [true, revokedAt])
        assert.deepEqual(second.json(), first.json())
        assert.deepEqual(Object.keys(key).sort(), KEY_FIELDS)
      })

      it('When a DELETE declares a Content-Type but sends no content, then the key is revoked; content that is not JSON gets 415 (regression: an empty JSON body got 400 invalid_json)', async () => {
        // Arrange
        const declared = ['application/json', 'text/plain', '']
        const made = await Promise.all(declared.map(async () => await create()))
        const another = await create()

        // Act
        const empty = await Promise.all(declared.map(async (type, i) => await call({
          method: 'DELETE', url: `/admin/v1/keys/${made[i]?.id}`, headers: { ...bearer(ADMIN_TOKEN), 'content-type': type }
        })))
        const text = await call({ method: 'DELETE', url: `/admin/v1/keys/${another.id}`, headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'text/plain' }, payload: 'please' })

        // Assert
        assert.deepEqual(empty.map((answer) => [answer.statusCode, (answer.json() as KeyBody).revoked]), declared.map(() => [200, true]))
        assert.equal(text.statusCode, 415)
        assert.equal((text.json() as { code: string }).code, 'unsupported_media_type')
      })

      it('When a token is looked up, current or previous, then 200 with its key and which token it is; an unknown token or a non-token, 404', async () => {
        // Arrange
        const made = await create({ plan: 'free', name: 'leaked' })
        const rolled = (await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 60 })).json() as KeyBody

        // Act
        const byCurrent = await post('/admin/v1/keys/lookup', { token: rolled.token })
        const byPrevious = await post('/admin/v1/keys/lookup', { token: made.token })
        const unknown = await post('/admin/v1/keys/lookup', { token: generateToken('production') })
        const notAToken = await post('/admin/v1/keys/lookup', { token: 'hello, world' })

        // Assert
        const { token: _, ...expected } = rolled
        assert.equal(byCurrent.statusCode, 200)
        assert.deepEqual(byCurrent.json(), { ...expected, matchedToken: 'current' })
        assert.equal(byPrevious.statusCode, 200)
        assert.deepEqual(byPrevious.json(), { ...expected, matchedToken: 'previous' })
        for (const response of [unknown, notAToken]) {
          assert.equal(response.statusCode, 404)
          assert.equal(errorOf(response).code, 'not_found')
        }
      })

      it('When a token is looked up after its overlap has ended, then 200 with its key, which says the token is a former one and shows no overlap', async () => {
        // Arrange
        const made = await create({ plan: 'free', name: 'rolled long ago' })
        const rolled = (await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 60 })).json() as KeyBody
        t.clock.advance(60_000)

        // Act
        const byFormer = await post('/admin/v1/keys/lookup', { token: made.token })

        // Assert
        const { token: _, ...expected } = rolled
        assert.equal(byFormer.statusCode, 200)
        assert.deepEqual(byFormer.json(), { ...expected, previousTokenExpiresAt: null, matchedToken: 'former' })
      })
    })

    describe('refusals', () => {
      const NO_SUCH_KEY = 987_654
      it('When a key does not exist, then reading, changing, rolling and revoking it give 404 not_found', async () => {
        // Act
        const responses = [
          await call({ url: `/admin/v1/keys/${NO_SUCH_KEY}`, headers: bearer(ADMIN_TOKEN) }),
          await patch(NO_SUCH_KEY, { name: 'x' }),
          await post(`/admin/v1/keys/${NO_SUCH_KEY}/roll`, { expireCurrentInSeconds: 0 }),
          await call({ method: 'DELETE', url: `/admin/v1/keys/${NO_SUCH_KEY}`, headers: bearer(ADMIN_TOKEN) })
        ]

        // Assert
        for (const response of responses) {
          assert.equal(response.statusCode, 404, response.body)
          assert.deepEqual(errorOf(response), { code: 'not_found', message: `No API key has the id ${NO_SUCH_KEY}.`, status: 404 })
        }
      })

      it('When a revoked key is changed or rolled, then 409 key_revoked, and it stays as it was', async () => {
        // Arrange
        const made = await create()
        const revoked = await call({ method: 'DELETE', url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })

        // Act
        const changed = await patch(made.id, { name: 'again' })
        const rolled = await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 0 })

        // Assert
        for (const response of [changed, rolled]) {
          assert.equal(response.statusCode, 409, response.body)
          assert.equal(errorOf(response).code, 'key_revoked')
          assert.equal(errorOf(response).status, 409)
        }
        const now = await call({ url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })
        assert.deepEqual(now.json(), revoked.json())
      })

      it('When an enterprise key is made or changed without its limits, then 400 naming the limit', async () => {
        // Arrange
        const free = await create()

        // Act & Assert
        assertRefused(await post('/admin/v1/keys', { plan: 'enterprise' }), 'body.perMinute')
        assertRefused(await post('/admin/v1/keys', { plan: 'enterprise', perMinute: 5 }), 'body.perDay')
        assertRefused(await patch(free.id, { plan: 'enterprise' }), 'body.perMinute')
      })

      it('When expiresAt is in the past or now, then 400 naming expiresAt, on making and on changing', async () => {
        // Arrange
        const free = await create()

        // Act & Assert
        assertRefused(await post('/admin/v1/keys', { plan: 'free', expiresAt: iso(t.clock.now() - 1000) }), 'body.expiresAt')
        assertRefused(await post('/admin/v1/keys', { plan: 'free', expiresAt: iso(t.clock.now()) }), 'body.expiresAt')
        assertRefused(await patch(free.id, { expiresAt: '2020-01-01T00:00:00Z' }), 'body.expiresAt')
        assertRefused(await post('/admin/v1/keys', { plan: 'free', expiresAt: 'tomorrow' }), 'body.expiresAt')
      })

      it('When expiresAt is a time no answer can write (past 9999 in UTC, before 0100), then 400 naming expiresAt, no key is made, and the list still answers', async () => {
        // Arrange
        const free = await create()

        // Act
        const refused = [
          await post('/admin/v1/keys', { plan: 'free', expiresAt: '9999-12-31T23:59:59.999999999-23:59' }),
          await post('/admin/v1/keys', { plan: 'free', expiresAt: '0099-12-31T23:59:59Z' }),
          await patch(free.id, { expiresAt: '9999-12-31T23:59:59-00:01' })
        ]
        const list = await call({ url: '/admin/v1/keys?limit=100', headers: bearer(ADMIN_TOKEN) })
        const one = await call({ url: `/admin/v1/keys/${free.id}`, headers: bearer(ADMIN_TOKEN) })

        // Assert
        for (const response of refused) assertRefused(response, 'body.expiresAt')
        assert.equal(list.statusCode, 200, list.body)
        assert.equal(one.statusCode, 200, one.body)
        assert.equal((one.json() as KeyBody).expiresAt, null)
      })

      it('When expiresAt is the last instant of 9999 written with an offset, then it is taken as that instant, in UTC', async () => {
        // Act
        const made = await post('/admin/v1/keys', { plan: 'free', expiresAt: '9999-12-31T23:59:59.999999999+01:00' })

        // Assert
        assert.equal(made.statusCode, 201, made.body)
        assert.equal((made.json() as KeyBody).expiresAt, '9999-12-31T22:59:59.999Z')
      })

      it('When the plan or a scope is unknown, or the scopes are empty, then 400 naming the field', async () => {
        // Arrange
        const free = await create()

        // Act & Assert
        assertRefused(await post('/admin/v1/keys', { plan: 'gold' }), 'body.plan')
        assertRefused(await patch(free.id, { plan: 'gold' }), 'body.plan')
        assertRefused(await post('/admin/v1/keys', { plan: 'free', scopes: ['pets:delete'] }), 'body.scopes')
        assertRefused(await patch(free.id, { scopes: ['pets:read', 'admin'] }), 'body.scopes')
        assertRefused(await post('/admin/v1/keys', { plan: 'free', scopes: [] }), 'body.scopes')
        assertRefused(await patch(free.id, { scopes: [] }), 'body.scopes')
        assertRefused(await post('/admin/v1/keys', {}), 'body.plan')
      })

      it('When concurrency is outside 1 to 10000 or not an integer, then 400 naming it, on making and on changing; the bounds themselves are taken', async () => {
        // Arrange
        const made = await create()

        // Act & Assert
        for (const value of [0, -1, 10_001, 1.5, '2', true]) {
          assertRefused(await post('/admin/v1/keys', { plan: 'free', concurrency: value }), 'body.concurrency')
          assertRefused(await patch(made.id, { concurrency: value }), 'body.concurrency')
        }
        // Null means the plan's, which a new key has without asking.
        assertRefused(await post('/admin/v1/keys', { plan: 'free', concurrency: null }), 'body.concurrency')
        assert.equal(((await call({ url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })).json() as KeyBody).concurrency, 5)
        assert.equal((await create({ plan: 'free', concurrency: 1 })).concurrency, 1)
        assert.equal((await create({ plan: 'free', concurrency: 10_000 })).concurrency, 10_000)
      })

      it('When expireCurrentInSeconds is outside 0 to 604800, missing or not an integer, then 400 naming it; the key keeps its token', async () => {
        // Arrange
        const made = await create()

        // Act & Assert
        for (const value of [-1, 604_801, 1.5, '60', null]) {
          assertRefused(await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: value }), 'body.expireCurrentInSeconds')
        }
        assertRefused(await post(`/admin/v1/keys/${made.id}/roll`, {}), 'body.expireCurrentInSeconds')
        const now = (await call({ url: `/admin/v1/keys/${made.id}`, headers: bearer(ADMIN_TOKEN) })).json() as KeyBody
        assert.equal(now.tokenHint, made.tokenHint)
        // The bounds themselves are taken.
        assert.equal((await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 604_800 })).statusCode, 201)
        assert.equal((await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 0 })).statusCode, 201)
      })

      it('When a body has an unknown field, then 400 naming it, on every operation that takes a body', async () => {
        // Arrange
        const made = await create()

        // Act & Assert
        assertRefused(await post('/admin/v1/keys', { plan: 'free', colour: 'red' }), 'body.colour')
        assertRefused(await post('/admin/v1/keys', { plan: 'free', id: 5 }), 'body.id')
        assertRefused(await patch(made.id, { revoked: false }), 'body.revoked')
        assertRefused(await post(`/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 0, token: made.token }), 'body.token')
        assertRefused(await post('/admin/v1/keys/lookup', { token: made.token, id: made.id }), 'body.id')
      })

      it('When an Expect it cannot meet is sent, then 417, as the admin document says (regression: "the admin document does not declare the 417 the admin listener answers")', async () => {
        // Act
        const response = await call({ method: 'POST', url: '/admin/v1/keys', headers: { ...admitted, expect: 'something-else' }, payload: '{"plan":"free"}' })

        // Assert
        assert.equal(response.statusCode, 417)
        assert.equal(errorOf(response).status, 417)
      })

      it('When a method the path lacks comes with the admin token and an Expect other than 100-continue, then 417 comes before 405, as on the public port', async () => {
        // Act
        const response = await call({ method: 'PUT', url: '/admin/v1/keys', headers: { ...admitted, expect: 'something-else' } })

        // Assert
        assert.equal(response.statusCode, 417)
        assert.equal(response.headers.allow, undefined)
      })

      it('When the id or a query parameter is not valid, then 400', async () => {
        // Act
        const responses = [
          await call({ url: '/admin/v1/keys/abc', headers: bearer(ADMIN_TOKEN) }),
          await call({ url: '/admin/v1/keys/0', headers: bearer(ADMIN_TOKEN) }),
          await call({ url: '/admin/v1/keys?limit=0', headers: bearer(ADMIN_TOKEN) }),
          await call({ url: '/admin/v1/keys?limit=101', headers: bearer(ADMIN_TOKEN) }),
          await call({ url: '/admin/v1/keys?cursor=abc', headers: bearer(ADMIN_TOKEN) }),
          await call({ url: '/admin/v1/keys?offset=3', headers: bearer(ADMIN_TOKEN) })
        ]

        // Assert
        for (const response of responses) assert.equal(response.statusCode, 400, response.body)
      })
    })

    it('When the keys are listed page by page, then each page holds at most limit keys in id order, and following Link rel="next" to the end gives every key once', async () => {
      // Arrange
      for (let i = 0; i < 5; i++) await create({ plan: 'free', name: `page ${i}` })
      const all = (await t.storage.listApiKeys()).map((key) => key.id)

      // Act
      const seen: number[] = []
      let url: string | undefined = '/admin/v1/keys?limit=3'
      let pages = 0
      while (url !== undefined) {
        const response = await call({ url, headers: bearer(ADMIN_TOKEN) })
        assert.equal(response.statusCode, 200, response.body)
        const page = response.json() as KeyBody[]
        assert.ok(page.length <= 3)
        seen.push(...page.map((key) => key.id))
        const link = response.headers.link
        if (link === undefined) {
          url = undefined
        } else {
          const next = /^<(\/admin\/v1\/keys\?[^>]+)>; rel="next"$/.exec(String(link))
          assert.ok(next !== null, `Link is not a relative next link: ${String(link)}`)
          assert.match(next[1] ?? '', /[?&]limit=3(&|$)/)
          url = next[1]
        }
        pages++
        assert.ok(pages <= all.length + 1, 'paging does not end')
      }

      // Assert
      assert.deepEqual(seen, all)
      assert.deepEqual(seen, [...seen].sort((a, b) => a - b))
      assert.ok(pages >= 3)
      const whole = await call({ url: '/admin/v1/keys?limit=100', headers: bearer(ADMIN_TOKEN) })
      assert.equal(whole.headers.link, undefined)
      assert.deepEqual((whole.json() as KeyBody[]).map((key) => key.id), all)
      const byDefault = await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN) })
      assert.equal((byDefault.json() as KeyBody[]).length, Math.min(20, all.length))
    })

    describe('who may call it', () => {
      it('When no token is sent, then 401 invalid_admin_token with WWW-Authenticate: Bearer realm="petstore-admin", on every path under /admin/v1', async () => {
        for (const [method, url] of [['GET', '/admin/v1/keys'], ['POST', '/admin/v1/keys'], ['GET', '/admin/v1/openapi.json'], ['GET', '/admin/v1/nothing']] as const) {
          // Act
          const response = await call({ method, url, remoteAddress: '198.51.100.1' })

          // Assert
          assert.equal(response.statusCode, 401, `${method} ${url}`)
          assert.equal(errorOf(response).code, 'invalid_admin_token')
          assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore-admin"')
        }
      })

      it('When the token is wrong, an API key, or the admin token with its last character changed, then 401 with error="invalid_token"', async () => {
        // Arrange
        const apiKey = await t.newKey('pro')
        const last = ADMIN_TOKEN.at(-1) === 'A' ? 'B' : 'A'

        for (const sent of ['nope', apiKey, `${ADMIN_TOKEN.slice(0, -1)}${last}`, `${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1)]) {
          // Act
          const response = await call({ url: '/admin/v1/keys', headers: bearer(sent), remoteAddress: '198.51.100.2' })

          // Assert
          assert.equal(response.statusCode, 401)
          assert.equal(errorOf(response).code, 'invalid_admin_token')
          assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore-admin", error="invalid_token"')
        }
      })

      it('When an address has sent 10 wrong tokens in a minute, then its 11th wrong token gets 429 with Retry-After, the right token is still admitted, and another address is not affected', async () => {
        // Arrange
        const from = '198.51.100.3'
        for (let i = 0; i < 10; i++) {
          assert.equal((await call({ url: '/admin/v1/keys', headers: bearer(`wrong-${i}`), remoteAddress: from })).statusCode, 401)
        }

        // Act
        const refused = await call({ url: '/admin/v1/keys', headers: bearer('wrong-10'), remoteAddress: from })
        const right = await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress: from })
        const other = await call({ url: '/admin/v1/keys', headers: bearer('wrong-0'), remoteAddress: '198.51.100.4' })
        t.clock.advance(60_000)
        const later = await call({ url: '/admin/v1/keys', headers: bearer('wrong-11'), remoteAddress: from })

        // Assert
        assert.equal(refused.statusCode, 429)
        assert.equal(errorOf(refused).code, 'rate_limited')
        assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/)
        assert.ok(Number(refused.headers['retry-after']) <= 60)
        assert.equal(right.statusCode, 200, 'the right token was locked out by wrong ones')
        assert.equal(other.statusCode, 401)
        assert.equal(later.statusCode, 401, 'the minute is over')
      })

      it('When a page on another origin makes the browser send 11 requests without Authorization, then each gets 401 and none is counted: the right token is admitted and a wrong one gets 401, not 429 (regression: the operators were locked out for a minute)', async () => {
        // Arrange
        const from = '198.51.100.5'
        for (let i = 0; i < 11; i++) {
          // Act: what fetch(…, { mode: 'no-cors', method: 'POST' }) sends
          const response = await call({ method: 'POST', url: '/admin/v1/keys', headers: { origin: 'https://elsewhere.example', 'content-type': 'text/plain' }, remoteAddress: from })

          // Assert
          assert.equal(response.statusCode, 401)
          assert.equal(errorOf(response).code, 'invalid_admin_token')
        }
        assert.equal((await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress: from })).statusCode, 200)
        assert.equal((await call({ url: '/admin/v1/keys', headers: bearer('wrong'), remoteAddress: from })).statusCode, 401)
      })

      it('When a request carries two Authorization headers, the admin token first, then 401 invalid_admin_token, as /v1 refuses two (regression: the first one was served)', async () => {
        // Act
        const response = await call({ url: '/admin/v1/keys', headers: { Authorization: [`Bearer ${ADMIN_TOKEN}`, 'Bearer other'] }, remoteAddress: '198.51.100.6' })

        // Assert
        assert.equal(response.statusCode, 401, response.body)
        assert.equal(errorOf(response).code, 'invalid_admin_token')
        assert.match(errorOf(response).message, /one Authorization header/)
      })

      it('When an answer is given, then it carries X-RateLimit-Limit (6000 a minute by default), X-RateLimit-Remaining and X-RateLimit-Reset', async () => {
        // Act
        const first = await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress: '198.51.100.7' })
        const second = await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress: '198.51.100.7' })
        const refused = await call({ url: '/admin/v1/keys', remoteAddress: '198.51.100.7' })

        // Assert
        assert.equal(first.statusCode, 200)
        assert.equal(first.headers['x-ratelimit-limit'], '6000')
        assert.equal(Number(first.headers['x-ratelimit-remaining']) - Number(second.headers['x-ratelimit-remaining']), 1)
        assert.ok(Number(first.headers['x-ratelimit-reset']) > t.clock.now() / 1000)
        assert.ok(Number(first.headers['x-ratelimit-reset']) <= t.clock.now() / 1000 + 60)
        assert.equal(refused.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining'], 'a request without the token was counted')
      })

      it('When an address has sent its limit of requests with the admin token in a minute, then the next gets 429 rate_limited with Retry-After, others are not affected, and the next minute it is served again', async () => {
        // Arrange
        const limited = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production', perMinute: 3 }, now: t.clock.now })
        try {
          const send = async (remoteAddress: string): Promise<LightMyRequestResponse> =>
            await call({ url: '/admin/v1/keys', headers: bearer(ADMIN_TOKEN), remoteAddress }, limited)
          const served = [await send('198.51.100.8'), await send('198.51.100.8'), await send('198.51.100.8')]

          // Act
          const refused = await send('198.51.100.8')
          const other = await send('198.51.100.9')
          t.clock.advance(60_000)
          const later = await send('198.51.100.8')

          // Assert
          assert.deepEqual(served.map((r) => [r.statusCode, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]), [[200, '3', '2'], [200, '3', '1'], [200, '3', '0']])
          assert.equal(refused.statusCode, 429)
          assert.equal(errorOf(refused).code, 'rate_limited')
          assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/)
          assert.equal(refused.headers['x-ratelimit-remaining'], '0')
          assert.equal(other.statusCode, 200)
          assert.equal(later.statusCode, 200)
        } finally {
          await limited.close()
        }
      })

      it('When ADMIN_TOKEN is sent to the public API, then 401 invalid_api_key', async () => {
        // Act
        const response = await t.app.inject({ url: '/v1/pets', headers: bearer(ADMIN_TOKEN) })

        // Assert
        assert.equal(response.statusCode, 401)
        assert.equal(errorOf(response).code, 'invalid_api_key')
      })

      it('When the admin routes are asked of the public app, with the admin token, then 404: they are never on the public port', async () => {
        for (const [method, url] of [['GET', '/admin/v1/keys'], ['POST', '/admin/v1/keys'], ['GET', '/admin/v1/openapi.json'], ['GET', '/admin/v1/keys/1']] as const) {
          // Act
          const response = await t.app.inject({ method, url, headers: admitted, ...(method === 'POST' ? { payload: '{"plan":"free"}' } : {}) })

          // Assert
          assert.equal(response.statusCode, 404, `${method} ${url}`)
          assert.equal(errorOf(response).code, 'not_found')
        }
      })
    })

    describe('at the public port\'s gate', () => {
      it('When a key made here is narrowed to pets:read, then createPet gets 403 once the lookup cache has passed', async () => {
        // Arrange
        const key = await create({ plan: 'pro' })
        const token = key.token ?? ''
        const before = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })

        // Act
        const changed = await patch(key.id, { scopes: ['pets:read'] })
        t.clock.advance(PAST_THE_CACHE_MS)
        const after = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: newPetJson() })
        const reading = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

        // Assert
        assert.equal(before.statusCode, 201, before.body)
        assert.equal(changed.statusCode, 200)
        assert.equal(after.statusCode, 403, after.body)
        assert.equal(errorOf(after).code, 'insufficient_scope')
        assert.equal(reading.statusCode, 200)
      })

      it('When a key is rolled with no overlap, then its old token is refused and its new one taken; once revoked, both are refused', async () => {
        // Arrange
        const key = await create({ plan: 'pro' })
        const old = key.token ?? ''
        assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(old) })).statusCode, 200)

        // Act
        const rolled = (await post(`/admin/v1/keys/${key.id}/roll`, { expireCurrentInSeconds: 0 })).json() as KeyBody
        t.clock.advance(PAST_THE_CACHE_MS)
        const byOld = await t.app.inject({ url: '/v1/pets', headers: bearer(old) })
        const byNew = await t.app.inject({ url: '/v1/pets', headers: bearer(rolled.token ?? '') })
        await call({ method: 'DELETE', url: `/admin/v1/keys/${key.id}`, headers: bearer(ADMIN_TOKEN) })
        t.clock.advance(PAST_THE_CACHE_MS)
        const afterRevoke = await t.app.inject({ url: '/v1/pets', headers: bearer(rolled.token ?? '') })

        // Assert
        assert.equal(byOld.statusCode, 401)
        assert.equal(byNew.statusCode, 200, byNew.body)
        assert.equal(afterRevoke.statusCode, 401)
      })
    })

    it('When each operation is answered with success and with each refusal a client meets (400, 401, 404, 409, 429), then every answer is as the admin OpenAPI document describes it', async () => {
      // Arrange: an admin app of its own, with room for the requests below and not one more, so that the last is refused 429.
      const requests: Array<InjectOptions & { url: string, headers: Record<string, string> }> = []
      const send = (method: InjectOptions['method'], url: string, body?: unknown, headers = body === undefined ? bearer(ADMIN_TOKEN) : admitted): void => {
        requests.push({ method, url, headers, remoteAddress: '198.51.100.10', ...(body === undefined ? {} : { payload: JSON.stringify(body) }) })
      }
      const made = await create({ plan: 'pro', name: 'described' })
      const revoked = await create({ plan: 'free' })
      await call({ method: 'DELETE', url: `/admin/v1/keys/${revoked.id}`, headers: bearer(ADMIN_TOKEN) })
      send('POST', '/admin/v1/keys', { plan: 'free', name: 'made here' })
      send('GET', '/admin/v1/keys?limit=1')
      send('GET', `/admin/v1/keys/${made.id}`)
      send('PATCH', `/admin/v1/keys/${made.id}`, { name: 'described again' })
      send('POST', `/admin/v1/keys/${made.id}/roll`, { expireCurrentInSeconds: 60 })
      send('GET', `/admin/v1/keys/${made.id}/usage`)
      send('POST', '/admin/v1/keys/lookup', { token: made.token })
      send('GET', '/admin/v1/overview')
      send('GET', '/admin/v1/usage')
      send('DELETE', `/admin/v1/keys/${made.id}`)
      send('POST', '/admin/v1/keys', { plan: 'no such plan' })
      send('GET', '/admin/v1/keys/999999999')
      send('PATCH', `/admin/v1/keys/${revoked.id}`, { name: 'too late' })
      send('GET', '/admin/v1/keys', undefined, {})
      send('GET', '/admin/v1/keys', undefined, bearer('wrong'))
      const admittedCount = requests.filter((r) => r.headers.authorization === `Bearer ${ADMIN_TOKEN}`).length
      send('GET', '/admin/v1/keys')
      const own = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production', perMinute: admittedCount }, now: t.clock.now })
      try {
        const document = await own.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN), remoteAddress: '198.51.100.11' })
        const ownChecker = new OpenApiChecker(document.body)

        // Act
        const answers: Array<{ where: string, status: number, problems: string[] }> = []
        for (const request of requests) {
          const response = await own.inject(request)
          const where = `${request.method ?? 'GET'} ${request.url} → ${response.statusCode}`
          answers.push({ where, status: response.statusCode, problems: ownChecker.check({ method: request.method ?? 'GET', url: request.url }, receivedOf(response)).problems })
        }

        // Assert
        assert.deepEqual(answers.map((a) => a.status), [201, 200, 200, 200, 201, 200, 200, 200, 200, 200, 400, 404, 409, 401, 401, 429], answers.map((a) => a.where).join('\n'))
        assert.deepEqual(answers.filter((a) => a.problems.length > 0), [])
      } finally {
        await own.close()
      }
    })
  })
}
