// Tracing (docs/OPERATING.md: Tracing): `petstore serve` on PostgreSQL and
// Redis, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver the test
// starts, exports one span per request, continuing the client's trace, with
// the PostgreSQL and Redis clients' calls as its descendants, and the
// request's log line names the trace. No span carries a token, whatever a
// client sends where.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { findTokens } from '../../src/keys/tokens.js'
import { bearer } from '../support/fixtures.js'
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { createKey, pollUntil, startServer, type ServerProcess } from '../support/process.js'
import { testRedisUrl } from '../support/redis.js'

const SERVER = 2
const hex = (bytes: number): string => randomBytes(bytes).toString('hex')
const encodeAll = (text: string): string => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('')

/** Undoes percent-encoding however many times it was applied. */
function decodedFully (text: string): string {
  let out = text
  for (let i = 0; i < 5; i++) out = out.replace(/%([0-9A-Fa-f]{2})/g, (_, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
  return out
}

/** Where in `value` (an export's body) a string holds a token, or one of `secrets` in any of its forms, as `path: what`. */
function leaksIn (value: unknown, secrets: ReadonlyMap<string, readonly string[]>, path = ''): string[] {
  if (typeof value === 'string') {
    const plain = decodedFully(value)
    const found = findTokens(plain).length > 0 ? ['a token'] : []
    for (const [name, forms] of secrets) {
      if (forms.some((form) => value.includes(form) || plain.includes(form))) found.push(name)
    }
    return found.map((what) => `${path}: ${what} in ${JSON.stringify(value).slice(0, 300)}`)
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => leaksIn(item, secrets, `${path}[${i}]`))
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([key, item]) => leaksIn(item, secrets, `${path}.${key}`))
  return []
}

describe('tracing, on PostgreSQL and Redis', { timeout: 60_000 }, () => {
  let receiver: OtlpReceiver | undefined
  let server: ServerProcess | undefined
  let token = ''

  const running = (): { receiver: OtlpReceiver, server: ServerProcess } => {
    assert.ok(receiver !== undefined && server !== undefined, 'not started')
    return { receiver, server }
  }

  /** The spans of one trace, once its request's span has come. */
  const traceOf = async (traceId: string): Promise<{ request: ReceivedSpan, spans: ReceivedSpan[] }> =>
    await pollUntil(async () => {
      const spans = running().receiver.spans.filter((span) => span.traceId === traceId)
      const request = spans.find((span) => span.scope === '@fastify/otel')
      return request === undefined ? undefined : { request, spans }
    }, { ms: 10_000, every: 50, what: `the spans of trace ${traceId}` })

  /** The request's log line, once written. */
  const logLineOf = async (requestId: string): Promise<Record<string, unknown>> =>
    await pollUntil(async () => {
      const line = running().server.stdout.split('\n').find((text) => text.includes(`"requestId":"${requestId}"`) && text.includes('"request completed"'))
      return line === undefined ? undefined : JSON.parse(line) as Record<string, unknown>
    }, { ms: 5_000, every: 20, what: `the log line of request ${requestId}` })

  before(async () => {
    receiver = await OtlpReceiver.start()
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') }
    token = (await createKey(env, ['--plan', 'pro', '--name', 'traced'])).token
    // A short batch delay: spans reach the receiver within a tenth of a second of their end.
    server = await startServer({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' })
  })
  after(async () => {
    await server?.dispose()
    await receiver?.close()
  })

  it('When a request carries a traceparent, then its span continues that trace, with its route and status, and the database and Redis calls as its descendants', async () => {
    // Arrange
    const traceId = hex(16)
    const parentSpanId = hex(8)
    const requestId = `traced-${hex(4)}`

    // Act
    const response = await fetch(`${running().server.origin}/v1/pets?limit=5`, {
      headers: { ...bearer(token), traceparent: `00-${traceId}-${parentSpanId}-01`, 'x-request-id': requestId }
    })
    assert.equal(response.status, 200, await response.text())
    const { request, spans } = await traceOf(traceId)

    // Assert
    assert.equal(request.parentSpanId, parentSpanId)
    assert.equal(request.kind, SERVER)
    assert.equal(request.name, 'GET /v1/pets')
    assert.equal(request.attributes['http.route'], '/v1/pets')
    assert.equal(request.attributes['http.response.status_code'], 200)
    assert.equal(request.attributes['http.request.method'], 'GET')
    const byId = new Map(spans.map((span) => [span.spanId, span]))
    const descendsFromRequest = (span: ReceivedSpan): boolean => {
      for (let parent = span.parentSpanId; parent !== undefined; parent = byId.get(parent)?.parentSpanId) {
        if (parent === request.spanId) return true
      }
      return false
    }
    const database = spans.filter((span) => span.scope === '@opentelemetry/instrumentation-pg')
    const redis = spans.filter((span) => span.scope === '@opentelemetry/instrumentation-ioredis')
    assert.ok(database.some((span) => span.attributes['db.system.name'] === 'postgresql'), `no PostgreSQL span in ${JSON.stringify(spans)}`)
    assert.ok(redis.some((span) => span.attributes['db.system.name'] === 'redis'), `no Redis span in ${JSON.stringify(spans)}`)
    for (const span of [...database, ...redis]) assert.ok(descendsFromRequest(span), `${span.name} is not under the request's span`)
    assert.deepEqual(spans.filter((span) => span !== request && !descendsFromRequest(span)), [])

    const line = await logLineOf(requestId)
    assert.equal(line.traceId, traceId)
    assert.equal(line.route, '/v1/pets')
    assert.equal(line.status, 200)
    const started = running().server.stdout.split('\n').find((text) => text.includes('"petstore started"'))
    assert.equal((JSON.parse(started ?? '{}') as { tracing?: string }).tracing, `${running().receiver.endpoint}/`)
  })

  it('When a request carries no traceparent, then its span starts a trace of its own, which its log line names', async () => {
    // Arrange
    const requestId = `untraced-${hex(4)}`

    // Act
    const response = await fetch(`${running().server.origin}/v1/pets/999`, { headers: { ...bearer(token), 'x-request-id': requestId } })
    assert.equal(response.status, 404)
    const line = await logLineOf(requestId)

    // Assert
    assert.match(String(line.traceId), /^[0-9a-f]{32}$/)
    const { request } = await traceOf(String(line.traceId))
    assert.equal(request.parentSpanId, undefined)
    assert.equal(request.name, 'GET /v1/pets/:petId')
    assert.equal(request.attributes['http.route'], '/v1/pets/:petId')
    assert.equal(request.attributes['http.response.status_code'], 404)
  })

  it('When ADMIN_TOKEN is sent in a public URL, then the request\'s span never carries it', async () => {
    // Arrange
    const adminToken = randomBytes(32).toString('base64url')
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') }
    const { token: key } = await createKey(env, ['--plan', 'pro', '--name', 'admin-in-url'])
    const admin = await startServer({ ...env, ADMIN_PORT: '0', ADMIN_TOKEN: adminToken, OTEL_EXPORTER_OTLP_ENDPOINT: running().receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' })
    const traceId = hex(16)
    try {
      // Act
      const response = await fetch(`${admin.origin}/v1/pets/${adminToken}`, { headers: { ...bearer(key), traceparent: `00-${traceId}-${hex(8)}-01` } })
      await response.arrayBuffer()
      const { request } = await traceOf(traceId)

      // Assert
      const path = String(request.attributes['url.path'])
      assert.ok(path.startsWith('/v1/pets/'), path)
      assert.ok(!path.includes(adminToken), `the span's url.path carries ADMIN_TOKEN: ${path}`)
    } finally {
      await admin.stop()
    }
  })

  it('When tokens of either environment and ADMIN_TOKEN are sent in paths, query strings and bodies to both listeners, as sent or encoded, then no exported span holds one, in its name, attributes, status, events or links (regression: a 404\'s message put the path into status.message and exception.message)', async () => {
    // Arrange
    const adminToken = randomBytes(32).toString('base64url')
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') }
    const live = (await createKey(env, ['--plan', 'pro', '--name', 'live'])).token
    const staging = (await createKey({ ...env, PETSTORE_ENV: 'staging' }, ['--plan', 'pro', '--name', 'staging'])).token
    const leaky = await startServer({ ...env, ADMIN_PORT: '0', ADMIN_TOKEN: adminToken, OTEL_EXPORTER_OTLP_ENDPOINT: running().receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' })
    const formsOf = (secret: string): string[] => {
      const bare = secret.replace(/^pet_(live|test)_/, '')
      return [secret, bare, encodeURIComponent(secret), encodeAll(secret), Buffer.from(secret).toString('base64url'), Buffer.from(secret).toString('hex')]
    }
    const secrets = new Map([['the production token', formsOf(live)], ['the staging token', formsOf(staging)], ['ADMIN_TOKEN', formsOf(adminToken)]])
    const traceIds: string[] = []
    try {
      await leaky.waitForStdout((out) => out.includes('petstore started'), 5_000, 'the started line')
      const adminOrigin = /"adminApi":"(http:\/\/127\.0\.0\.1:\d+)\/admin\/v1"/.exec(leaky.stdout)?.[1]
      assert.ok(adminOrigin !== undefined, `no admin API address in:\n${leaky.stdout}`)
      const send = async (url: string, init: { method?: string, headers?: Record<string, string>, body?: string } = {}): Promise<void> => {
        const traceId = hex(16)
        traceIds.push(traceId)
        const response = await fetch(url, { ...init, headers: { ...init.headers, traceparent: `00-${traceId}-${hex(8)}-01` } })
        await response.arrayBuffer()
      }
      const json = { 'content-type': 'application/json' }

      // Act
      for (const forms of secrets.values()) {
        for (const sent of forms) {
          const api = `${leaky.origin}/v1`
          await send(`${api}/nope/${sent}`, { headers: bearer(live) })
          await send(`${api}/nope/${sent}`)
          await send(`${api}/pets/${sent}`, { headers: bearer(live) })
          await send(`${api}/pets/${sent}`, { method: 'PUT', headers: bearer(live) })
          await send(`${api}/pets?status=${sent}&${sent}=1`, { headers: bearer(live) })
          await send(`${api}/pets`, { method: 'POST', headers: { ...bearer(live), ...json }, body: `{"name":"${sent}","categoryId":"${sent}","${sent}":1}` })
          await send(`${api}/pets`, { method: 'POST', headers: { ...bearer(live), ...json }, body: `{"name":${sent}}` })
          const admin = `${adminOrigin}/admin/v1`
          await send(`${admin}/nope/${sent}`, { headers: bearer(adminToken) })
          await send(`${admin}/nope/${sent}`)
          await send(`${admin}/keys/${sent}`, { headers: bearer(adminToken) })
          await send(`${admin}/keys?cursor=${sent}&state=${sent}&${sent}=1`, { headers: bearer(adminToken) })
          await send(`${admin}/keys`, { method: 'POST', headers: { ...bearer(adminToken), ...json }, body: `{"plan":"${sent}","name":${sent}}` })
        }
      }
      await pollUntil(async () => {
        const seen = new Set(running().receiver.spans.filter((span) => span.scope === '@fastify/otel').map((span) => span.traceId))
        return traceIds.every((traceId) => seen.has(traceId)) ? true : undefined
      }, { ms: 20_000, every: 50, what: `the spans of ${traceIds.length} requests` })

      // Assert
      const leaks = running().receiver.exported.flatMap((body, i) => leaksIn(body, secrets, `export ${i}`))
      const byWhat = new Map<string, number>()
      for (const leak of leaks) {
        const what = /: (.+?) in "/.exec(leak)?.[1] ?? ''
        byWhat.set(what, (byWhat.get(what) ?? 0) + 1)
      }
      const summary = [...byWhat].map(([what, count]) => `${what} ${count}`).join(', ')
      assert.deepEqual(leaks, [], `${leaks.length} strings of the exported spans hold a token (${summary}):\n${leaks.slice(0, 20).join('\n')}`)
      // Redacted, not dropped: the 404s' messages are still there, the path's token in brackets.
      const exported = JSON.stringify(running().receiver.exported)
      assert.match(exported, /"Nothing is at GET \/v1\/nope\/\[redacted\]\."/)
      assert.match(exported, /"Nothing is at GET \/admin\/v1\/nope\/\[redacted\]\."/)
    } finally {
      await leaky.stop()
    }
  })

  it('When the service stops before its next export, then the spans it holds are sent as it shuts down', async () => {
    // Arrange: an export only every ten minutes, so that only the shutdown can send it.
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') }
    const { token: key } = await createKey(env, ['--plan', 'pro', '--name', 'last'])
    const stopping = await startServer({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: running().receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '600000' })
    const traceId = hex(16)
    try {
      const response = await fetch(`${stopping.origin}/v1/pets`, { headers: { ...bearer(key), traceparent: `00-${traceId}-${hex(8)}-01` } })
      assert.equal(response.status, 200)

      // Act
      const exit = await stopping.stop()

      // Assert
      assert.equal(exit?.code, 0)
      assert.ok(running().receiver.spans.some((span) => span.traceId === traceId && span.scope === '@fastify/otel'), 'the request\'s span was not sent at shutdown')
    } finally {
      await stopping.dispose()
    }
  })
})
