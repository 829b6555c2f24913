import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setImmediate as tick } from 'node:timers/promises'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { buildTestApp, capturingLogger, errorOf, jsonHeaders, type LogEntry, type TestApp } from '../support/app.js'
import { bearer, buildPet } from '../support/fixtures.js'
import { generateToken } from '../../src/keys/tokens.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The lines written for one request, once its response has gone. */
async function linesOf (entries: () => LogEntry[], requestId: string): Promise<LogEntry[]> {
  await tick()
  return entries().filter((entry) => entry.requestId === requestId)
}

/** Runs `use` on an app whose log lines the test reads, and closes the app whatever happens. */
async function withLoggedApp (use: (t: TestApp, entries: () => LogEntry[]) => Promise<void>): Promise<void> {
  const { logger, entries } = capturingLogger()
  const t = await buildTestApp({}, { logger })
  try {
    await use(t, entries)
  } finally {
    await t.close()
  }
}

/** The client's id was not used: the response carries one the service made, and so does its one log line. */
async function assertOwnRequestId (response: LightMyRequestResponse, entries: () => LogEntry[]): Promise<void> {
  const made = String(response.headers['x-request-id'])
  assert.match(made, UUID)
  assert.equal((await linesOf(entries, made)).length, 1)
}

describe('request ids and the log line of each request', () => {
  it('When a client sends a usable X-Request-Id, then the response echoes it and the request\'s log line carries it', async () => {
    await withLoggedApp(async (t, entries) => {
      const token = await t.newKey()
      const id = 'trace:7f3a/ABC~xyz-' + 'x'.repeat(100)

      const response = await t.app.inject({ url: '/v1/pets', headers: { ...bearer(token), 'x-request-id': id } })

      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['x-request-id'], id)
      const lines = await linesOf(entries, id)
      assert.equal(lines.length, 1)
    })
  })

  for (const [what, id] of [
    ['longer than 128 characters', 'x'.repeat(129)],
    ['empty', ''],
    ['holding a space', 'two words'],
    ['holding a control character', 'a\tb'],
    ['not ASCII', 'café'],
    ['holding something shaped like a token (it would be logged)', 'retry-of-pet_live_2bJ0kQ3xZ9']
  ] as const) {
    it(`When a client's X-Request-Id is ${what}, then the service makes its own, echoes it and logs it`, async () => {
      await withLoggedApp(async (t, entries) => {
        const response = await t.app.inject({ url: '/v1/pets', headers: { 'x-request-id': id } })

        await assertOwnRequestId(response, entries)
      })
    })
  }

  it('When a request is answered, then one line at info names the key, method, route template, URL, status and duration, and never the token', async () => {
    await withLoggedApp(async (t, entries) => {
      const token = await t.newKey('pro')
      const created = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token, { 'idempotency-key': 'k-1' }), payload: JSON.stringify(buildPet()) })
      const id = String(created.headers['x-request-id'])

      const response = await t.app.inject({ url: `/v1/pets/${String(created.json<{ id: number }>().id)}`, headers: { ...bearer(token), 'x-request-id': 'get-1' } })

      assert.equal(response.statusCode, 200)
      const [line, ...more] = await linesOf(entries, 'get-1')
      assert.deepEqual(more, [])
      assert.equal(line?.level, 30)
      assert.equal(line?.msg, 'request completed')
      assert.equal(typeof line?.keyId, 'number')
      assert.equal(line?.method, 'GET')
      assert.equal(line?.route, '/v1/pets/:petId')
      assert.match(line?.url ?? '', /^\/v1\/pets\/\d+$/)
      assert.equal(line?.status, 200)
      assert.equal(line?.code, undefined)
      assert.ok(typeof line?.durationMs === 'number' && line.durationMs >= 0)
      assert.equal((await linesOf(entries, id))[0]?.status, 201)
      const everything = JSON.stringify(entries())
      assert.ok(!everything.includes(token), 'a token reached the log')
      assert.ok(!everything.includes('k-1'), 'an idempotency key reached the log')
    })
  })

  it('When a request is refused, then its one line carries the error code and no key', async () => {
    await withLoggedApp(async (t, entries) => {
      const response = await t.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer pet_live_nottherightshape', 'x-request-id': 'refused-1' } })

      assert.equal(response.statusCode, 401)
      const lines = await linesOf(entries, 'refused-1')
      assert.equal(lines.length, 1)
      assert.equal(lines[0]?.code, errorOf(response).code)
      assert.equal(lines[0]?.status, 401)
      assert.equal(lines[0]?.keyId, undefined)
      assert.ok(!JSON.stringify(lines).includes('nottherightshape'), 'a token reached the log')
    })
  })

  it('When a key keeps sending after being refused, then one line says it is banned, and until when', async () => {
    const { logger, entries } = capturingLogger()
    const t = await buildTestApp({ RATE_LIMIT_BAN_THRESHOLD: '3', RATE_LIMIT_BAN_SECONDS: '60' }, { logger })
    try {
      const token = await t.newKey('free', { perMinute: 1, perDay: 100 })
      const send = async (): Promise<number> => (await t.app.inject({ url: '/v1/pets', headers: bearer(token) })).statusCode

      const statuses = []
      for (let i = 0; i < 6; i++) statuses.push(await send())

      assert.deepEqual(statuses, [200, 429, 429, 429, 429, 429])
      await tick()
      const bans = entries().filter((entry) => entry.bannedUntil !== undefined)
      assert.equal(bans.length, 1)
      assert.equal(bans[0]?.level, 40)
      assert.equal(bans[0]?.bannedUntil, new Date(t.clock.now() + 60_000).toISOString())
      assert.equal(typeof bans[0]?.keyId, 'number')
    } finally {
      await t.close()
    }
  })
})

/** Every character percent-encoded, as some clients and proxies do. */
const encodeAll = (text: string): string => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('')
/** One character of the secret (after the 9-character prefix) percent-encoded. */
const encodeOne = (token: string, at: number): string => token.slice(0, at) + encodeAll(token[at] ?? '') + token.slice(at + 1)
/** Undoes percent-encoding however many times it was applied, so that the assertions look for the token in any form. */
function decodedFully (text: string): string {
  let out = text
  for (let i = 0; i < 5; i++) out = out.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
  return out
}

// Regression: "token redaction misses encoded forms". Only `pet_live_`
// (with `_` possibly as %5F) was looked for: a token with another
// character percent-encoded, or its secret sent without the prefix, was
// logged as sent, in the URL and as the request id.
describe('token redaction misses encoded forms', () => {
  const token = generateToken('production')
  const secret = token.slice('pet_live_'.length)
  const forms: Array<[string, string]> = [
    ['as sent', token],
    ['with its prefix percent-encoded', encodeAll('pet_live_') + secret],
    ['with one letter of the prefix percent-encoded', `%70${token.slice(1)}`],
    ['with one character of the secret percent-encoded', encodeOne(token, 20)],
    ['with its last character percent-encoded', encodeOne(token, token.length - 1)],
    ['wholly percent-encoded', encodeAll(token)],
    ['percent-encoded twice', encodeAll(encodeAll('pet_live_')) + secret],
    ['as its secret without the prefix', secret],
    ['as its secret without the prefix, percent-encoded', encodeAll(secret)],
    ['after a malformed % sequence', `%zz%${token}%`],
    ['as a staging token\'s secret', generateToken('staging').slice('pet_test_'.length)]
  ]

  for (const [form, sent] of forms) {
    it(`When a token is in the URL ${form}, then the request's log line carries [redacted] in its place`, async () => {
      // Arrange
      await withLoggedApp(async (t, entries) => {
        // Act
        await t.app.inject({ url: `/v1/pets?limit=1&access_token=${sent}&status=sold`, headers: { 'x-request-id': 'in-url' } })

        // Assert
        const [line] = await linesOf(entries, 'in-url')
        assert.equal(line?.url, '/v1/pets?limit=1&access_token=' + (form.startsWith('after a malformed') ? '%zz%[redacted]%' : '[redacted]') + '&status=sold')
        const secretOf = decodedFully(sent).slice(-36)
        assert.ok(!decodedFully(JSON.stringify(entries())).includes(secretOf.slice(0, 20)), 'a token reached the log')
      })
    })

    it(`When X-Request-Id holds a token ${form}, then the service makes its own id`, async () => {
      // Arrange
      await withLoggedApp(async (t, entries) => {
        // Act
        const response = await t.app.inject({ url: '/v1/pets', headers: { 'x-request-id': `retry-of-${sent}` } })

        // Assert
        await assertOwnRequestId(response, entries)
        assert.ok(!decodedFully(JSON.stringify(entries())).includes(decodedFully(sent).slice(-36, -16)), 'a token reached the log')
      })
    })
  }

  it('When a URL holds only a malformed % sequence and no token, then it is logged as sent', async () => {
    await withLoggedApp(async (t, entries) => {
      await t.app.inject({ url: '/v1/pets?q=%E0%A4%A&x=%%41', headers: { 'x-request-id': 'malformed' } })

      const [line] = await linesOf(entries, 'malformed')
      assert.equal(line?.url, '/v1/pets?q=%E0%A4%A&x=%%41')
    })
  })

  it('When a URL holds a 36-character base62 run whose checksum does not hold, then it is logged as sent', async () => {
    await withLoggedApp(async (t, entries) => {
      const lookalike = secret.slice(0, 30) + (secret.endsWith('0') ? '1' : '0').repeat(6)

      await t.app.inject({ url: `/v1/pets?q=${lookalike}`, headers: { 'x-request-id': 'lookalike' } })

      const [line] = await linesOf(entries, 'lookalike')
      assert.equal(line?.url, `/v1/pets?q=${lookalike}`)
    })
  })
})

describe('the admin token and encoded API tokens reach the log', () => {
  // What `openssl rand -base64 32` makes: base64, with `+`, `/` and `=`.
  const ADMIN_TOKEN = 'q8Zr/4Kd+Wm2Xp9Lt0Vb7Ns3Hc6Jf1Gy5Ue8Ra2Io4E='
  const apiToken = generateToken('production')

  /** Runs `use` on an admin app whose log lines the test reads. */
  async function withLoggedAdmin (use: (admin: FastifyInstance, entries: () => LogEntry[]) => Promise<void>): Promise<void> {
    const { logger, entries } = capturingLogger()
    const storage = openSqlite('sqlite::memory:')
    const admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage, environment: 'production' }, logger })
    try {
      await use(admin, entries)
    } finally {
      await admin.close()
      await storage.close()
    }
  }
  const logHolds = (entries: () => LogEntry[], secret: string): boolean => decodedFully(JSON.stringify(entries())).includes(secret)

  for (const [form, sent] of [
    ['as sent', ADMIN_TOKEN],
    ['percent-encoded', encodeURIComponent(ADMIN_TOKEN)],
    ['wholly percent-encoded', encodeAll(ADMIN_TOKEN)],
    ['base64-encoded', Buffer.from(ADMIN_TOKEN).toString('base64url')],
    ['hex-encoded', Buffer.from(ADMIN_TOKEN).toString('hex')]
  ] as const) {
    it(`When the admin token is in an admin URL ${form}, then the log line carries [redacted] and never the token`, async () => {
      await withLoggedAdmin(async (admin, entries) => {
        // Act
        await admin.inject({ url: `/admin/v1/keys?access_token=${sent}`, headers: { 'x-request-id': 'admin-in-url' } })

        // Assert
        const [line] = await linesOf(entries, 'admin-in-url')
        assert.ok(line !== undefined)
        assert.match(String(line.url), /\[redacted\]/)
        assert.ok(!logHolds(entries, ADMIN_TOKEN), `the admin token reached the log: ${String(line.url)}`)
        assert.ok(!String(line.url).includes(sent))
      })
    })
  }

  it('When X-Request-Id is the admin token, then the admin listener makes its own id and the token never reaches the log', async () => {
    await withLoggedAdmin(async (admin, entries) => {
      // Act
      const response = await admin.inject({ url: '/admin/v1/keys', headers: { 'x-request-id': ADMIN_TOKEN } })

      // Assert
      await assertOwnRequestId(response, entries)
      assert.ok(!logHolds(entries, ADMIN_TOKEN))
    })
  })

  it('When the admin token is sent to the public port in the URL or X-Request-Id, then it never reaches the log', async () => {
    const { logger, entries } = capturingLogger()
    const t = await buildTestApp({ ADMIN_TOKEN }, { logger })
    try {
      // Act
      await t.app.inject({ url: `/v1/pets?access_token=${encodeURIComponent(ADMIN_TOKEN)}`, headers: { 'x-request-id': 'public-in-url' } })
      const response = await t.app.inject({ url: '/v1/pets', headers: { 'x-request-id': ADMIN_TOKEN } })

      // Assert
      assert.match(String((await linesOf(entries, 'public-in-url'))[0]?.url), /access_token=\[redacted\]/)
      await assertOwnRequestId(response, entries)
      assert.ok(!logHolds(entries, ADMIN_TOKEN))
    } finally {
      await t.close()
    }
  })

  for (const [form, sent] of [
    ['base64', Buffer.from(apiToken).toString('base64')],
    ['base64url', Buffer.from(apiToken).toString('base64url')],
    ['base64, percent-encoded', encodeURIComponent(Buffer.from(apiToken).toString('base64'))],
    ['hex', Buffer.from(apiToken).toString('hex')],
    ['upper-case hex', Buffer.from(apiToken).toString('hex').toUpperCase()]
  ] as const) {
    it(`When an API token is in the URL as ${form}, then the log line carries [redacted] in its place`, async () => {
      await withLoggedApp(async (t, entries) => {
        // Act
        await t.app.inject({ url: `/v1/pets?limit=1&access_token=${sent}&status=sold`, headers: { 'x-request-id': 'encoded-in-url' } })

        // Assert
        const [line] = await linesOf(entries, 'encoded-in-url')
        assert.equal(line?.url, '/v1/pets?limit=1&access_token=[redacted]&status=sold')
      })
    })
  }
})
