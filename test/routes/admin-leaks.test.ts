// A leaked key as operators see it (docs/KEYS.md: Leaked tokens): the admin
// API's key, its listing, its lookup by token and the overview, on both
// configurations, each answer checked against the admin OpenAPI document.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import type { KeyView } from '../../src/keys/manage.js'
import { CONFIGURATIONS, buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { OpenApiChecker, receivedOf } from '../support/openapi-check.js'
import { keyListFile, makeScanner, report } from '../support/scanner.js'

const ADMIN_TOKEN = 'adm-leaks-4Rk8Tz2Nq6Wb1Yx9Lm3Pc7Vd5'
const WHERE = 'https://github.com/octocat/Hello-World/blob/0123456789abcdef0123456789abcdef01234567/config/.env'

for (const configuration of CONFIGURATIONS) {
  describe(`a leaked key in the admin API (${configuration.name})`, () => {
    const github = makeScanner()
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker
    let leaked: string
    let given: string
    let clean: string
    let reportedAt: string

    async function call (method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse> {
      const response = await admin.inject({
        method, url, remoteAddress: '127.0.0.1', headers: payload === undefined ? bearer(ADMIN_TOKEN) : jsonHeaders(ADMIN_TOKEN), ...(payload === undefined ? {} : { payload: JSON.stringify(payload) })
      })
      assert.deepEqual(checker.check({ method, url }, receivedOf(response)).problems, [], `${method} ${url} → ${response.statusCode}`)
      return response
    }
    const idOf = async (token: string): Promise<number> => ((await call('POST', '/admin/v1/keys/lookup', { token })).json() as KeyView).id

    before(async () => {
      // Arrange: one key reported by a scanner, one given up by its holder, one untouched.
      t = await buildTestApp({ SECRET_SCANNING_KEYS_URL: keyListFile(github) }, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production' }, now: t.clock.now })
      await admin.ready()
      checker = new OpenApiChecker((await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })).body)
      leaked = await t.newKey()
      given = await t.newKey()
      clean = await t.newKey()
      reportedAt = new Date(t.clock.now()).toISOString()
      const body = report([leaked], WHERE)
      const scanned = await t.app.inject({ method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json', ...github.sign(body) }, payload: body })
      assert.equal(scanned.statusCode, 200, scanned.body)
      const revoked = await t.app.inject({ method: 'POST', url: '/v1/credentials/revoke', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ credentials: [given] }) })
      assert.equal(revoked.statusCode, 202, revoked.body)
      // The holder's revocation runs after its answer.
      for (let i = 0; i < 100 && !((await call('POST', '/admin/v1/keys/lookup', { token: given })).json() as KeyView).revoked; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    })
    after(async () => {
      await admin.close()
      await t.close()
    })

    it('When a scanner reported a key\'s token, then the key shows where, when and by which report, and is revoked', async () => {
      // Act
      const key = (await call('GET', `/admin/v1/keys/${await idOf(leaked)}`)).json() as KeyView

      // Assert
      assert.equal(key.revoked, true)
      assert.deepEqual(key.leak, { reportedAt, report: key.leak?.report, url: WHERE, source: 'content' })
      assert.match(String(key.leak?.report), /^github:[0-9a-f]{64}$/)
    })

    it('When a holder gave a token up, then the key shows the holder\'s report, with no place', async () => {
      // Act
      const key = (await call('GET', `/admin/v1/keys/${await idOf(given)}`)).json() as KeyView

      // Assert
      assert.equal(key.revoked, true)
      assert.deepEqual(key.leak, { reportedAt, report: 'holder', url: null, source: null })
    })

    it('When keys are listed, looked up or counted, then only the leaked ones show a leak, and the overview counts them', async () => {
      // Act
      const listed = (await call('GET', '/admin/v1/keys?limit=100')).json() as KeyView[]
      const found = (await call('POST', '/admin/v1/keys/lookup', { token: leaked })).json() as KeyView
      const overview = (await call('GET', '/admin/v1/overview')).json() as { keys: { leaked: number, byState: Record<string, number> } }

      // Assert
      const leaks = new Map(listed.map((key) => [key.id, key.leak?.report ?? null]))
      assert.equal(leaks.get(await idOf(clean)), null)
      assert.match(String(leaks.get(await idOf(leaked))), /^github:/)
      assert.equal(leaks.get(await idOf(given)), 'holder')
      assert.equal(found.leak?.url, WHERE)
      assert.equal(overview.keys.leaked, 2)
      assert.equal(overview.keys.byState.revoked, 2)
    })
  })
}
