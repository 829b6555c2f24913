// Every kind of error the service answers, provoked on purpose, and none of
// them says more than the Error body: no stack trace, no file path, no
// `TypeError:` from inside (docs/API.md: Errors). The
// catalogue (src/errors.ts) is the list to cover: a code added there without
// a case here fails the coverage test.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import type { InjectOptions } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { ERROR_CODES, type ErrorCode } from '../../src/errors.js'
import { issueKey } from '../../src/keys/manage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { generateToken } from '../../src/keys/tokens.js'
import { createWebhook, sendTestEvent } from '../../src/webhooks/manage.js'
import { buildTestApp, type TestApp } from '../support/app.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { RawConnection, parseRawResponse, rawRequest, type RawResponse } from '../support/process.js'

/** What a stack trace or an internal leaves behind in a text. */
const LEAKS: Array<[string, RegExp]> = [
  ['a stack frame', /\bat (?:async )?[\w$.<>[\] ]*\(?(?:file:\/\/|node:|\/)[^\s)]*:\d+:\d+\)?/],
  ['a bare stack frame', /(?:\n|\\n)\s+at \S/],
  ['node:internal', /node:internal/],
  ['a file URL', /file:\/\//],
  ['a source file path', /(?:\/[\w.@-]+)+\.(?:[cm]?js|ts|node)\b/],
  ['an error class prefix', /\b[A-Z]\w*Error:/],
  ['a Node error code', /\b(?:ERR_[A-Z_]+|E[A-Z]{3,}|SQLITE_[A-Z_]+|FST_[A-Z_]+)\b/],
  ['the fault injected here', /secret internal detail/]
]

const BODY_FIELDS = new Set(['code', 'message', 'status', 'details'])

interface Answer {
  status: number
  contentType: string
  body: string
}

function fromRaw (response: RawResponse): Answer {
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: response.body }
}

/** The shared test app (a clock the test moves, a storage it can break), on a real port too, for what only a socket can send. */
interface Harness extends TestApp {
  port: number
}

async function harness (env: Record<string, string> = {}): Promise<Harness> {
  // Short connection timeouts, so that the parser's 408 comes quickly.
  const subject = await buildTestApp(env, { timeouts: { headersMs: 300, requestMs: 3_000, checkEveryMs: 50 } })
  await subject.app.listen({ host: '127.0.0.1', port: 0 })
  return { ...subject, port: (subject.app.server.address() as AddressInfo).port }
}

async function inject (t: Pick<Harness, 'app'>, options: InjectOptions): Promise<Answer> {
  const response = await t.app.inject(options)
  return { status: response.statusCode, contentType: String(response.headers['content-type'] ?? ''), body: response.body }
}

/** A request line and headers sent as is; the body follows when given. */
async function raw (t: Harness, lines: string[], body = ''): Promise<Answer> {
  return fromRaw(await rawRequest(t.port, `${lines.join('\r\n')}\r\n\r\n${body}`))
}

/** Headers that never finish: the parser's headers timeout answers. */
async function stalled (t: Harness): Promise<Answer> {
  const connection = await RawConnection.open(t.port)
  try {
    connection.write('GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-Slow: ')
    const text = await connection.waitFor((_received, ended) => ended, 5_000, 'the headers timeout')
    return fromRaw(parseRawResponse(text))
  } finally {
    connection.close()
  }
}

/** Checks one answer; returns its code. */
function assertCleanError (what: string, answer: Answer, expected: { status: number, code: ErrorCode }): ErrorCode {
  assert.equal(answer.status, expected.status, `${what}: ${answer.body}`)
  assert.match(answer.contentType, /^application\/json\b/, `${what}: Content-Type`)
  for (const [name, pattern] of LEAKS) assert.doesNotMatch(answer.body, pattern, `${what}: the body carries ${name}: ${answer.body}`)
  const body = JSON.parse(answer.body) as Record<string, unknown>
  const fields = Object.keys(body)
  assert.deepEqual(fields.filter((field) => !BODY_FIELDS.has(field)), [], `${what}: fields beyond the Error body: ${answer.body}`)
  assert.equal(body.code, expected.code, what)
  assert.equal(body.status, expected.status, what)
  assert.equal(typeof body.message, 'string', what)
  if (expected.status >= 500) assert.deepEqual(fields.sort(), ['code', 'message', 'status'], `${what}: a 5xx says no more than code, message and status`)
  if (body.details !== undefined) {
    assert.ok(Array.isArray(body.details), what)
    for (const detail of body.details as unknown[]) {
      assert.deepEqual(Object.keys(detail as object).sort(), ['field', 'reason'], `${what}: ${answer.body}`)
    }
  }
  return expected.code
}

/** A fault from deep inside, with a stack, a file path and a message that must stay in the log. */
function internalFault (): Error {
  const error = new TypeError('secret internal detail in /srv/petstore/dist/src/db/sqlite/storage.js:42:7')
  Object.assign(error, { code: 'ERR_SECRET_INTERNAL' })
  return error
}

describe('error bodies carry no stack trace and no internals', { timeout: 60_000 }, () => {
  let t: Harness
  let token: string
  const seen = new Set<ErrorCode>()
  const check = (what: string, answer: Answer, status: number, code: ErrorCode): void => {
    seen.add(assertCleanError(what, answer, { status, code }))
  }

  before(async () => {
    t = await harness({ RATE_LIMIT_BAN_THRESHOLD: '2' })
    token = await t.newKey('pro')
  })
  after(async () => { await t.close() })

  it('When requests are refused before they reach their operation (401, 403, 404, 405, 400 URL, 417), then each body is a bare Error', async () => {
    check('no key', await inject(t, { url: '/v1/pets' }), 401, 'missing_api_key')
    check('Basic scheme', await inject(t, { url: '/v1/pets', headers: { authorization: 'Basic dXNlcjpwYXNz' } }), 401, 'missing_api_key')
    check('a mistyped key', await inject(t, { url: '/v1/pets', headers: bearer('pet_live_not-a-key') }), 401, 'invalid_api_key')
    check('an unknown key', await inject(t, { url: '/v1/pets', headers: bearer(generateToken('production')) }), 401, 'invalid_api_key')
    const readOnly = await issueKey(t.storage, { plan: 'pro', name: 'read-only', perMinute: undefined, perDay: undefined, scopes: ['pets:read'], environment: t.config.environment, now: t.clock.now() })
    check('a read-only key adding an animal', await inject(t, { method: 'POST', url: '/v1/pets', headers: { ...bearer(readOnly.token), 'content-type': 'application/json' }, payload: newPetJson() }), 403, 'insufficient_scope')
    check('a staging key', await inject(t, { url: '/v1/pets', headers: bearer(generateToken('staging')) }), 401, 'invalid_api_key')
    check('two keys', await inject(t, { url: '/v1/pets', headers: { authorization: `Bearer ${token} ${token}` } }), 401, 'invalid_api_key')
    check('unknown route', await inject(t, { url: '/v1/animals', headers: bearer(token) }), 404, 'not_found')
    check('unknown route outside /v1', await inject(t, { url: '/wp-admin/../../etc/passwd' }), 404, 'not_found')
    check('no such pet', await inject(t, { url: '/v1/pets/9223372036854775807', headers: bearer(token) }), 404, 'not_found')
    check('DELETE', await inject(t, { method: 'DELETE', url: '/v1/pets', headers: bearer(token) }), 405, 'method_not_allowed')
    check('bad percent-encoding', await inject(t, { url: '/v1/pets/%zz', headers: bearer(token) }), 400, 'invalid_request')
    check('a 2,000-character segment', await inject(t, { url: `/v1/pets/${'9'.repeat(2000)}`, headers: bearer(token) }), 400, 'invalid_request')
    check('Expect', await inject(t, { url: '/v1/pets', headers: { ...bearer(token), expect: 'the-impossible' } }), 417, 'expectation_failed')
  })

  it('When parameters, headers or bodies are invalid (400, 413, 415, 422), then each body is a bare Error', async () => {
    const post = (payload: string, headers: Record<string, string> = {}): Promise<Answer> =>
      inject(t, { method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json', ...headers }, payload })
    check('limit=0', await inject(t, { url: '/v1/pets?limit=0', headers: bearer(token) }), 400, 'invalid_request')
    check('limit=abc', await inject(t, { url: '/v1/pets?limit=abc', headers: bearer(token) }), 400, 'invalid_request')
    check('an unknown status', await inject(t, { url: '/v1/pets?status=lost', headers: bearer(token) }), 400, 'invalid_request')
    check('an unknown parameter', await inject(t, { url: '/v1/pets?sort=name', headers: bearer(token) }), 400, 'invalid_request')
    check('a forged cursor', await inject(t, { url: '/v1/pets?cursor=AAAA', headers: bearer(token) }), 400, 'invalid_request')
    check('a negative petId', await inject(t, { url: '/v1/pets/-1', headers: bearer(token) }), 400, 'invalid_request')
    check('a missing name', await post('{"categoryId":1}'), 400, 'invalid_request')
    check('an id in the body', await post('{"id":1,"name":"a","categoryId":1}'), 400, 'invalid_request')
    check('categoryId past int64', await post('{"name":"a","categoryId":9223372036854775808}'), 400, 'invalid_request')
    check('a control character', await post('{"name":"a\\u0000","categoryId":1}'), 400, 'invalid_request')
    check('an empty Idempotency-Key', await post(newPetJson(), { 'idempotency-key': '""' }), 400, 'invalid_request')
    check('truncated JSON', await post('{"name":'), 400, 'invalid_json')
    check('an empty body', await post(''), 400, 'invalid_json')
    check('a repeated key', await post('{"name":"a","name":"b","categoryId":1}'), 400, 'invalid_json')
    check('__proto__', await post('{"__proto__":{"x":1},"name":"a","categoryId":1}'), 400, 'invalid_json')
    check('deep nesting', await post(`${'['.repeat(100_000)}${']'.repeat(100_000)}`.slice(0, 16_000)), 400, 'invalid_json')
    check('malformed UTF-8', await inject(t, {
      method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json' }, payload: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])
    }), 400, 'invalid_json')
    check('17 KiB', await post(`{"name":"${'a'.repeat(17 * 1024)}","categoryId":1}`), 413, 'payload_too_large')
    check('text/plain', await post(newPetJson(), { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
    check('an unsigned secret-scanning report', await inject(t, {
      method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json' }, payload: '[{"token":"pet_live_x","type":"petstore"}]'
    }), 401, 'invalid_signature')
    check('latin1', await post(newPetJson(), { 'content-type': 'application/json; charset=latin1' }), 415, 'unsupported_media_type')
    check('no Content-Type', await inject(t, { method: 'POST', url: '/v1/pets', headers: bearer(token), payload: newPetJson() }), 415, 'unsupported_media_type')
    assert.equal((await post(newPetJson({ name: 'Once' }), { 'idempotency-key': 'errors-1' })).status, 201)
    check('a reused Idempotency-Key', await post(newPetJson({ name: 'Twice' }), { 'idempotency-key': 'errors-1' }), 422, 'idempotency_key_reused')
  })

  it('When an Idempotency-Key is still in flight (409), then the second request gets a bare Error', async () => {
    const slow = await harness()
    try {
      const key = await slow.newKey('pro')
      const original = slow.storage.createPetOnce.bind(slow.storage)
      let release: () => void = () => {}
      let entered: () => void = () => {}
      const held = new Promise<void>((resolve) => { release = resolve })
      const inStorage = new Promise<void>((resolve) => { entered = resolve })
      slow.storage.createPetOnce = async (...args) => { entered(); await held; return await original(...args) }
      const request = { method: 'POST' as const, url: '/v1/pets', headers: { ...bearer(key), 'content-type': 'application/json', 'idempotency-key': 'in-flight' }, payload: newPetJson() }

      // inject() starts a request only once it is awaited: then() starts the first one now.
      const first = slow.app.inject(request).then((response) => response)
      await inStorage
      const second = await inject(slow, request)
      release()

      check('the same key in flight', second, 409, 'idempotency_key_in_use')
      assert.equal((await first).statusCode, 201)
    } finally {
      await slow.close()
    }
  })

  it('When limits are spent (429 rate_limited, api_key_banned), then each body is a bare Error', async () => {
    const free = await t.newKey('free')
    for (let i = 0; i < 60; i++) await inject(t, { url: '/v1/pets?limit=1', headers: bearer(free) })
    check('the 61st request', await inject(t, { url: '/v1/pets?limit=1', headers: bearer(free) }), 429, 'rate_limited')
    await inject(t, { url: '/v1/pets?limit=1', headers: bearer(free) })
    check('after the ban threshold', await inject(t, { url: '/v1/pets?limit=1', headers: bearer(free) }), 429, 'api_key_banned')
  })

  it('When a key has its cap of requests in flight (429 concurrency_limited), then the body is a bare Error', async () => {
    // Arrange: listings held until the test lets them go, so that the free key's 5 stay in flight.
    let letGo = (): void => {}
    const held = new Promise<void>((resolve) => { letGo = resolve })
    const storage = openSqlite('sqlite::memory:')
    const listings = storage.listPetsJson?.bind(storage)
    const paused = await buildTestApp({}, { storage: Object.assign(storage, { listPetsJson: async (query: Parameters<NonNullable<typeof listings>>[0]) => { await held; return await listings!(query) } }) })
    try {
      const free = await paused.newKey('free')
      const inFlight = Array.from({ length: 5 }, async () => await inject(paused, { url: '/v1/pets', headers: bearer(free) }))
      check('a sixth request in flight', await inject(paused, { url: '/v1/pets', headers: bearer(free) }), 429, 'concurrency_limited')
      letGo()
      await Promise.all(inFlight)
    } finally {
      letGo()
      await paused.close()
    }
  })

  it('When the operation is past its sunset (410), then the body is a bare Error', async () => {
    const before = t.clock.ms
    t.clock.ms = Date.parse('2031-01-01T00:00:30Z')
    try {
      check('getPet after 2030-12-05', await inject(t, { url: '/v1/pets/1', headers: bearer(token) }), 410, 'gone')
    } finally {
      t.clock.ms = before
    }
  })

  it('When Node\'s parser refuses the request (400, 408, 431, CONNECT, no Host, Content-Length), then each body is a bare Error', async () => {
    check('a malformed header', await raw(t, ['GET /v1/pets HTTP/1.1', 'Host: localhost', 'This is not a header']), 400, 'invalid_request')
    check('a malformed request line', await raw(t, ['GET /v1/pets HTTP/9.9.9', 'Host: localhost']), 400, 'invalid_request')
    check('no Host', await raw(t, ['GET /v1/pets HTTP/1.1', `Authorization: Bearer ${token}`]), 400, 'invalid_request')
    check('CONNECT', await raw(t, ['CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443']), 400, 'invalid_request')
    check('two Content-Lengths', await raw(t, [
      'POST /v1/pets HTTP/1.1', 'Host: localhost', `Authorization: Bearer ${token}`, 'Content-Type: application/json', 'Content-Length: 5', 'Content-Length: 6'
    ], '{"a":1}'), 400, 'invalid_request')
    check('20 KiB of headers', await raw(t, ['GET /v1/pets HTTP/1.1', 'Host: localhost', `X-Padding: ${'a'.repeat(20 * 1024)}`]), 431, 'request_header_fields_too_large')
    check('headers too slow', await stalled(t), 408, 'request_timeout')
  })

  it('When the storage throws an unexpected error (500), then the body is code, message and status only', async () => {
    const broken = await harness()
    try {
      const key = await broken.newKey('pro')
      broken.storage.listPets = async () => { throw internalFault() }
      broken.storage.listPetsJson = async () => { throw internalFault() }
      broken.storage.getPet = async () => { throw internalFault() }
      broken.storage.getPetJson = async () => { throw internalFault() }
      broken.storage.createPetOnce = async () => { throw internalFault() }
      broken.storage.createPet = async () => { throw internalFault() }

      check('listPets throws', await inject(broken, { url: '/v1/pets', headers: bearer(key) }), 500, 'internal_error')
      check('getPet throws', await inject(broken, { url: '/v1/pets/1', headers: bearer(key) }), 500, 'internal_error')
      check('createPet throws', await inject(broken, {
        method: 'POST', url: '/v1/pets', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: newPetJson()
      }), 500, 'internal_error')
      check('createPet throws, over a socket', await raw(broken, [
        'POST /v1/pets HTTP/1.1', 'Host: localhost', `Authorization: Bearer ${key}`, 'Content-Type: application/json', 'Idempotency-Key: raw-500',
        `Content-Length: ${Buffer.byteLength(newPetJson())}`, 'Connection: close'
      ], newPetJson()), 500, 'internal_error')
    } finally {
      await broken.close()
    }
  })

  it('When the database is closed (503), then the body is code, message and status only', async () => {
    const closed = await harness()
    try {
      const key = await closed.newKey('pro')
      // One request first, so that the key is cached and the closed database is met by the operation itself.
      await inject(closed, { url: '/v1/pets', headers: bearer(key) })
      await closed.storage.close()

      check('listPets on a closed database', await inject(closed, { url: '/v1/pets', headers: bearer(key) }), 503, 'service_unavailable')
      check('a key lookup on a closed database', await inject(closed, { url: '/v1/pets', headers: bearer(generateToken('production')) }), 503, 'service_unavailable')
      check('createPet on a closed database', await inject(closed, {
        method: 'POST', url: '/v1/pets', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: newPetJson()
      }), 503, 'service_unavailable')
      const ready = await inject(closed, { url: '/readyz' })
      assert.equal(ready.status, 503)
      for (const [name, pattern] of LEAKS) assert.doesNotMatch(ready.body, pattern, `/readyz carries ${name}: ${ready.body}`)
    } finally {
      await closed.close()
    }
  })

  it('When a secret-scanning report comes before its key list could ever be read (503), then the body is code, message and status only', async () => {
    const unread = await buildTestApp({ SECRET_SCANNING_KEYS_URL: 'file:///nonexistent/keys.json' })
    try {
      const body = '[{"token":"pet_live_x","type":"petstore_api_token"}]'
      check('a report with the key list unread', await inject(unread, {
        method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json', 'github-public-key-identifier': 'k', 'github-public-key-signature': 'c2ln' }, payload: body
      }), 503, 'service_unavailable')
    } finally {
      await unread.close()
    }
  })

  it('When a request is shed under overload (503), then the body is code, message and status only', async () => {
    const shedding = await buildTestApp({}, { overload: { cause: 'event_loop_delay', reading: { eventLoopDelayMs: 900, dbPoolWaitMs: undefined } } })
    try {
      check('a request shed under overload', await inject(shedding, { url: '/v1/pets', headers: bearer(token) }), 503, 'overloaded')
    } finally {
      await shedding.close()
    }
  })

  it('When the admin API refuses a request (401, 409, 400, 404, a pending delivery resent), then each body is a bare Error', async () => {
    const adminToken = 'admin-token-for-error-bodies-0123456789'
    const admin = await buildAdminApp({ api: { token: adminToken, storage: t.storage, environment: t.config.environment }, now: t.clock.now })
    try {
      const json = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }
      check('no admin token', await inject({ app: admin }, { url: '/admin/v1/keys' }), 401, 'invalid_admin_token')
      check('an API key on the admin API', await inject({ app: admin }, { url: '/admin/v1/keys', headers: bearer(token) }), 401, 'invalid_admin_token')
      const key = await issueKey(t.storage, { plan: 'free', name: 'gone', perMinute: undefined, perDay: undefined, environment: t.config.environment, now: t.clock.now() })
      assert.equal((await inject({ app: admin }, { method: 'DELETE', url: `/admin/v1/keys/${key.id}`, headers: { authorization: json.authorization } })).status, 200)
      check('rolling a revoked key', await inject({ app: admin }, { method: 'POST', url: `/admin/v1/keys/${key.id}/roll`, headers: json, payload: '{"expireCurrentInSeconds":0}' }), 409, 'key_revoked')
      check('an enterprise key without limits', await inject({ app: admin }, { method: 'POST', url: '/admin/v1/keys', headers: json, payload: '{"plan":"enterprise"}' }), 400, 'invalid_request')
      check('no such key', await inject({ app: admin }, { url: '/admin/v1/keys/424242', headers: json }), 404, 'not_found')
      // No dispatcher runs here: the test event's delivery stays pending.
      const webhook = await createWebhook(t.storage, { url: 'https://hooks.example.com/h', events: undefined, description: undefined, now: t.clock.now() }, { allowPrivate: false })
      const { webhookId } = await sendTestEvent(t.storage, webhook.id, t.clock.now())
      check('resending a pending delivery', await inject({ app: admin }, { method: 'POST', url: `/admin/v1/webhooks/${webhook.id}/deliveries/${webhookId}/resend`, headers: { authorization: json.authorization } }),
        409, 'delivery_pending')
    } finally {
      await admin.close()
    }
  })

  it('When every case above has run, then every code of the error catalogue was provoked', () => {
    const missing = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !seen.has(code))
    assert.deepEqual(missing, [], `codes no case provoked: ${missing.join(', ')}`)
  })
})
