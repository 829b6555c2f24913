// The admin API's views of many keys (docs/KEYS.md: The console), through
// `inject`, on both configurations: the key list's search, filters, sort
// by last use and its cursors; every key's usage per day; the overview.
// Each configuration has a database of its own, so counts are exact.
// Every answer is checked against the admin OpenAPI document as served.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { EVENT_TYPES } from '../../src/domain.js'
import { buildAdminApp } from '../../src/http/admin.js'
import type { KeyView } from '../../src/keys/manage.js'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { OpenApiChecker, receivedOf } from '../support/openapi-check.js'

const ADMIN_TOKEN = 'adm-overview-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5'
const DAY_MS = 86_400_000

interface OverviewBody {
  today: string
  usage: Array<{ date: string, admitted: number, refused: number }>
  busiest: Array<{ key: KeyView, admitted: number, refused: number }>
  keys: { total: number, byState: Record<string, number>, byPlan: Record<string, number>, leaked: number }
  choices: { plans: Array<{ plan: string, perMinute: number | null, perDay: number | null }>, scopes: string[], overlap: { maxSeconds: number, defaultSeconds: number, suggestedSeconds: number[] }, eventTypes: string[] }
}

for (const configuration of CONFIGURATIONS) {
  describe(`the admin API's views of many keys (${configuration.name})`, () => {
    let t: TestApp
    let admin: FastifyInstance
    let checker: OpenApiChecker
    const problems: string[] = []
    /** The keys made in `before`, by name. */
    const keys = new Map<string, KeyView & { token: string }>()
    let today = 0

    async function call (options: InjectOptions & { url: string }): Promise<LightMyRequestResponse> {
      const response = await admin.inject({ remoteAddress: '127.0.0.1', ...options })
      const method = options.method ?? 'GET'
      const found = checker.check({ method, url: options.url }, receivedOf(response)).problems
      problems.push(...found.map((problem) => `${method} ${options.url}: ${problem}`))
      assert.deepEqual(found, [], `the admin document does not describe ${method} ${options.url} → ${response.statusCode}`)
      return response
    }
    const get = async (url: string): Promise<LightMyRequestResponse> => await call({ url, headers: bearer(ADMIN_TOKEN) })
    const ids = (response: LightMyRequestResponse): number[] => (response.json() as KeyView[]).map((key) => key.id)
    const id = (name: string): number => {
      const key = keys.get(name)
      assert.ok(key !== undefined, `no key ${name}`)
      return key.id
    }

    /** Every key a listing gives, following Link rel="next" to the end. */
    async function everyPage (url: string): Promise<{ ids: number[], pages: number }> {
      const seen: number[] = []
      let next: string | undefined = url
      let pages = 0
      while (next !== undefined) {
        const response = await get(next)
        assert.equal(response.statusCode, 200, response.body)
        seen.push(...ids(response))
        const link = response.headers.link
        next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(String(link))?.[1]
        pages++
        assert.ok(pages < 50, 'paging does not end')
      }
      return { ids: seen, pages }
    }

    before(async () => {
      t = await buildTestApp({}, configuration)
      admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: t.storage, environment: 'production' }, now: t.clock.now })
      await admin.ready()
      checker = new OpenApiChecker((await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })).body)
      const made: Array<[string, Record<string, unknown>]> = [
        ['Acme Mobile', { plan: 'pro' }],
        ['acme web', { plan: 'free' }],
        ['Globex', { plan: 'business' }],
        ['Initech 100%_off', { plan: 'free' }],
        ['Umbrella', { plan: 'enterprise', perMinute: 5, perDay: 50 }],
        ['Soon gone', { plan: 'free', expiresAt: new Date(t.clock.now() + 60_000).toISOString() }],
        ['Revoked one', { plan: 'pro' }]
      ]
      for (const [name, body] of made) {
        const response = await admin.inject({ method: 'POST', url: '/admin/v1/keys', headers: jsonHeaders(ADMIN_TOKEN), payload: JSON.stringify({ name, ...body }) })
        assert.equal(response.statusCode, 201, response.body)
        keys.set(name, response.json())
      }
      await admin.inject({ method: 'DELETE', url: `/admin/v1/keys/${id('Revoked one')}`, headers: bearer(ADMIN_TOKEN) })
      t.clock.advance(120_000)
      today = Math.floor(t.clock.now() / DAY_MS)
      await t.storage.addUsage([
        { keyId: id('Globex'), day: today, admitted: 50, refused: 5 },
        { keyId: id('Acme Mobile'), day: today, admitted: 70, refused: 0 },
        { keyId: id('acme web'), day: today, admitted: 1, refused: 0 },
        { keyId: id('Globex'), day: today - 3, admitted: 7, refused: 2 },
        { keyId: id('Acme Mobile'), day: today - 3, admitted: 3, refused: 1 },
        { keyId: id('Globex'), day: today - 40, admitted: 1000, refused: 0 }
      ], new Map([
        [id('Globex'), t.clock.now() - 1000],
        [id('Acme Mobile'), t.clock.now() - 5000],
        [id('acme web'), t.clock.now() - 1000]
      ]))
    })
    after(async () => {
      await admin.close()
      await t.close()
    })

    it('When the list is searched, then q matches a name or token hint in any case, or an id; % and _ are text, not wildcards', async () => {
      // Arrange
      const hint = (keys.get('Globex')?.tokenHint ?? '').slice(-4)

      // Act
      const acme = await get('/admin/v1/keys?q=ACME')
      const byId = await get(`/admin/v1/keys?q=${id('Umbrella')}`)
      const byHint = await get(`/admin/v1/keys?q=${encodeURIComponent(hint)}`)
      const literal = await get(`/admin/v1/keys?q=${encodeURIComponent('0%_')}`)
      const wildcard = await get(`/admin/v1/keys?q=${encodeURIComponent('a%e')}`)

      // Assert
      assert.deepEqual(ids(acme), [id('Acme Mobile'), id('acme web')])
      // An id may also be found in another key's token hint.
      assert.ok(ids(byId).includes(id('Umbrella')), byId.body)
      assert.ok(ids(byHint).includes(id('Globex')), byHint.body)
      assert.deepEqual(ids(literal), [id('Initech 100%_off')])
      assert.deepEqual(ids(wildcard), [])
    })

    it('When the list is filtered by state and plan, then only the keys in that state and on that plan are given', async () => {
      // Act
      const expired = await get('/admin/v1/keys?state=expired')
      const revoked = await get('/admin/v1/keys?state=revoked')
      const active = await get('/admin/v1/keys?state=active')
      const freeActive = await get('/admin/v1/keys?state=active&plan=free')
      const acmePro = await get('/admin/v1/keys?q=acme&plan=pro')

      // Assert
      assert.deepEqual(ids(expired), [id('Soon gone')])
      assert.deepEqual(ids(revoked), [id('Revoked one')])
      assert.deepEqual(ids(active), ['Acme Mobile', 'acme web', 'Globex', 'Initech 100%_off', 'Umbrella'].map(id))
      assert.deepEqual(ids(freeActive), [id('acme web'), id('Initech 100%_off')])
      assert.deepEqual(ids(acmePro), [id('Acme Mobile')])
    })

    it('When the list is sorted by last use and paged two at a time, then the most recent come first, ties by id, never-used keys last, each key once', async () => {
      // Act
      const { ids: seen, pages } = await everyPage('/admin/v1/keys?sort=lastUsed&limit=2')
      const filtered = await everyPage('/admin/v1/keys?sort=lastUsed&limit=1&plan=free')

      // Assert
      const used = [id('Globex'), id('acme web')].sort((a, b) => a - b)
      const never = ['Initech 100%_off', 'Umbrella', 'Soon gone', 'Revoked one'].map(id).sort((a, b) => a - b)
      assert.deepEqual(seen, [...used, id('Acme Mobile'), ...never])
      assert.equal(pages, 4)
      assert.deepEqual(filtered.ids, [id('acme web'), id('Initech 100%_off'), id('Soon gone')])
    })

    it('When a cursor made for one sort is sent with the other, was never made or was changed, then 400 invalid_request naming query.cursor; the cursor made is opaque', async () => {
      // Arrange
      const byUse = await get('/admin/v1/keys?sort=lastUsed&limit=1')
      const useCursor = /cursor=([^&>]+)/.exec(String(byUse.headers.link))?.[1] ?? ''
      const byId = await get('/admin/v1/keys?limit=1')
      const idCursor = /cursor=([^&>]+)/.exec(String(byId.headers.link))?.[1] ?? ''

      // Act
      const responses = [
        await get(`/admin/v1/keys?cursor=${useCursor}`),
        await get(`/admin/v1/keys?sort=lastUsed&cursor=${idCursor}`),
        await get('/admin/v1/keys?sort=lastUsed&cursor=x-1'),
        // A key's id, as cursors once were, and a cursor made here with its last character changed.
        await get(`/admin/v1/keys?cursor=${id('Globex')}`),
        await get(`/admin/v1/keys?cursor=${idCursor.slice(0, -1)}${idCursor.endsWith('A') ? 'B' : 'A'}`)
      ]

      // Assert
      assert.match(useCursor, /^[A-Za-z0-9_-]{16,}$/)
      assert.match(idCursor, /^[A-Za-z0-9_-]{16,}$/)
      for (const response of responses) {
        assert.equal(response.statusCode, 400, response.body)
        const error = errorOf(response)
        assert.equal(error.code, 'invalid_request')
        assert.ok(error.details?.some((detail) => detail.field === 'query.cursor'), response.body)
      }
    })

    it('When a filter is not one the list knows, or q is empty, then 400 invalid_request naming it', async () => {
      // Act
      const responses: Array<[string, LightMyRequestResponse]> = [
        ['state', await get('/admin/v1/keys?state=gone')],
        ['plan', await get('/admin/v1/keys?plan=gold')],
        ['sort', await get('/admin/v1/keys?sort=name')],
        ['q', await get('/admin/v1/keys?q=')],
        ['q', await get(`/admin/v1/keys?q=${'x'.repeat(201)}`)],
        ['from', await get('/admin/v1/usage?from=yesterday')],
        ['since', await get('/admin/v1/overview?since=2026-01-01')]
      ]

      // Assert
      for (const [field, response] of responses) {
        assert.equal(response.statusCode, 400, response.body)
        assert.ok(errorOf(response).details?.some((detail) => detail.field.endsWith(field)), response.body)
      }
    })

    it('When every key\'s usage is asked for, then one row per day with the keys\' counts added up, zeros included, oldest first', async () => {
      // Arrange
      const date = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10)

      // Act
      const byDefault = await get('/admin/v1/usage')
      const span = await get(`/admin/v1/usage?from=${date(today - 3)}&to=${date(today)}`)
      const reversed = await get(`/admin/v1/usage?from=${date(today)}&to=${date(today - 1)}`)
      const tooLong = await get(`/admin/v1/usage?from=${date(today - 400)}&to=${date(today)}`)

      // Assert
      assert.equal(byDefault.statusCode, 200)
      assert.equal((byDefault.json() as unknown[]).length, 30)
      assert.deepEqual(span.json(), [
        { date: date(today - 3), admitted: 10, refused: 3 },
        { date: date(today - 2), admitted: 0, refused: 0 },
        { date: date(today - 1), admitted: 0, refused: 0 },
        { date: date(today), admitted: 121, refused: 5 }
      ])
      for (const response of [reversed, tooLong]) {
        assert.equal(response.statusCode, 400, response.body)
        assert.ok(errorOf(response).details?.some((detail) => detail.field === 'query.from'), response.body)
      }
    })

    it('When requests are counted for today and yesterday after the totals were read, then the next read has them; days over for longer were read once', async () => {
      // Arrange
      const date = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10)
      const url = `/admin/v1/usage?from=${date(today - 3)}&to=${date(today)}`
      const before = (await get(url)).json() as Array<{ admitted: number }>

      // Act
      await t.storage.addUsage([
        { keyId: id('Globex'), day: today, admitted: 4, refused: 0 },
        { keyId: id('Globex'), day: today - 1, admitted: 2, refused: 0 }
      ], new Map())
      const after = (await get(url)).json() as Array<{ admitted: number }>
      await t.storage.addUsage([
        { keyId: id('Globex'), day: today, admitted: -4, refused: 0 },
        { keyId: id('Globex'), day: today - 1, admitted: -2, refused: 0 }
      ], new Map())

      // Assert
      assert.deepEqual(after.map((row) => row.admitted), [before[0]?.admitted, before[1]?.admitted, (before[2]?.admitted ?? 0) + 2, (before[3]?.admitted ?? 0) + 4])
    })

    it('When the overview is asked for, then it has 30 days of every key\'s usage, the busiest keys today, keys by state and plan, and the choices a key may take', async () => {
      // Arrange: the overview read once, as the console opens on it, then
      // requests counted for today and yesterday after that read, so that
      // today's figures must be read afresh, not taken from what was read before.
      const date = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10)
      const first = await get('/admin/v1/overview')
      assert.equal(first.statusCode, 200, first.body)
      const added = [
        { keyId: id('Umbrella'), day: today, admitted: 80, refused: 3 },
        { keyId: id('Umbrella'), day: today - 1, admitted: 9, refused: 1 }
      ]
      await t.storage.addUsage(added, new Map())

      // Act
      let response: LightMyRequestResponse
      try {
        response = await get('/admin/v1/overview')
      } finally {
        await t.storage.addUsage(added.map((row) => ({ ...row, admitted: -row.admitted, refused: -row.refused })), new Map())
      }

      // Assert
      assert.equal(response.statusCode, 200, response.body)
      const body = response.json() as OverviewBody
      assert.equal(body.today, date(today))
      assert.equal(body.usage.length, 30)
      assert.equal(body.usage[0]?.date, date(today - 29))
      // Today: the 121 admitted and 5 refused counted in `before`, and the 80 and 3 counted above.
      assert.deepEqual(body.usage.at(-1), { date: date(today), admitted: 201, refused: 8 })
      assert.deepEqual(body.usage.at(-2), { date: date(today - 1), admitted: 9, refused: 1 })
      assert.deepEqual(body.usage.at(-4), { date: date(today - 3), admitted: 10, refused: 3 })
      assert.equal(body.usage.reduce((sum, day) => sum + day.admitted, 0), 220)
      assert.deepEqual(body.busiest.map((row) => [row.key.name, row.admitted, row.refused]), [['Umbrella', 80, 3], ['Acme Mobile', 70, 0], ['Globex', 50, 5], ['acme web', 1, 0]])
      assert.deepEqual(body.keys, {
        total: 7,
        byState: { active: 5, expired: 1, revoked: 1 },
        byPlan: { free: 3, pro: 2, business: 1, enterprise: 1 },
        leaked: 0
      })
      assert.deepEqual(body.choices.plans.map((plan) => plan.plan), ['free', 'pro', 'business', 'enterprise'])
      assert.deepEqual(body.choices.plans[0], { plan: 'free', perMinute: 60, perDay: 1000 })
      assert.deepEqual(body.choices.scopes, ['pets:read', 'pets:write'])
      assert.equal(body.choices.overlap.maxSeconds, 604_800)
      assert.ok(body.choices.overlap.defaultSeconds > 0)
      assert.ok(body.choices.overlap.suggestedSeconds.includes(0))
      assert.deepEqual(body.choices.eventTypes, [...EVENT_TYPES])
    })

    it('When every test above has run, then every answer was as the admin OpenAPI document describes it', () => {
      assert.deepEqual(problems, [])
    })
  })
}
