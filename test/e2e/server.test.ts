// The service as operators run it: `petstore serve` in its own process on a
// real port, keys made with the `petstore keys` command, requests over real
// HTTP (and over a raw socket, for what no HTTP client would send).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { get as httpGet, type IncomingHttpHeaders } from 'node:http'
import {
  CLI, RawConnection, createKey, idsIn, isCompleteResponse, linkTarget, makeTempDir, parseErrorBody, parseRawResponse, pollUntil, rawRequest, removeTempDir, runCli, runCliOk, sqliteUrl, startServer, type ServerProcess
} from '../support/process.js'
import { generateToken } from '../../src/keys/tokens.js'
import { FIRST_UNSAFE_INTEGER, INT64_MAX, bearer, newPetJson, type NewPetInput } from '../support/fixtures.js'

const TOKEN = /^pet_live_[0-9A-Za-z]{36}$/
const REQUEST_TIMEOUT_MS = 5_000
/** Every rate-limit header a response may carry: the de facto X-RateLimit-* and the IETF draft's. */
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']

/** A GET over a new connection from `localAddress` (any of 127.0.0.0/8): to the server, a client of its own. */
async function getFrom (localAddress: string, url: string): Promise<{ status: number, headers: IncomingHttpHeaders }> {
  return await new Promise((resolve, reject) => {
    const request = httpGet(url, { localAddress, agent: false, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }, (response) => {
      response.resume()
      response.once('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }))
      response.once('error', reject)
    })
    request.once('error', reject)
  })
}

describe('petstore serve, as a process over real HTTP', { timeout: 60_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let env: Record<string, string> = {}
  let token = ''

  const running = (): ServerProcess => {
    assert.ok(server !== undefined, 'the server was not started')
    return server
  }

  async function call (path: string, init: { method?: string, headers?: Record<string, string>, body?: string } = {}): Promise<Response> {
    return await fetch(`${running().origin}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  }

  async function addPet (pet: NewPetInput = {}, apiToken = token): Promise<{ id: string, text: string }> {
    const response = await call('/v1/pets', {
      method: 'POST',
      headers: { ...bearer(apiToken), 'content-type': 'application/json' },
      body: newPetJson(pet)
    })
    const text = await response.text()
    assert.equal(response.status, 201, text)
    const [id] = idsIn(text)
    assert.ok(id !== undefined, `no id in ${text}`)
    return { id, text }
  }

  before(async () => {
    dir = makeTempDir()
    env = { DATABASE_URL: sqliteUrl(dir) }
    server = await startServer(env)
    token = (await createKey(env, ['--plan', 'pro', '--name', 'e2e'])).token
  })

  after(async () => {
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When the server starts with PORT=0, then it prints the real port on stdout and answers on it', async () => {
    // Arrange
    const { port, stdout } = running()

    // Act
    const response = await call('/healthz')

    // Assert
    assert.ok(port > 0 && port < 65536, `port ${port}`)
    assert.match(stdout, new RegExp(`listening on http://127\\.0\\.0\\.1:${port}\\b`))
    assert.equal(response.status, 200)
  })

  it('When /healthz and /readyz are called without a key, then both answer 200 and carry no rate-limit headers', async () => {
    // Act
    const health = await call('/healthz')
    const ready = await call('/readyz')

    // Assert
    assert.equal(health.status, 200)
    assert.equal(ready.status, 200)
    assert.deepEqual(await health.json(), { status: 'ok' })
    const readyBody = await ready.json() as { status: string }
    assert.equal(readyBody.status, 'ok')
    for (const name of RATE_LIMIT_HEADERS) {
      assert.equal(health.headers.get(name), null, `/healthz carries ${name}`)
      assert.equal(ready.headers.get(name), null, `/readyz carries ${name}`)
    }
  })

  it('When one client calls /healthz and /readyz 61 times each, then every answer is 200 and its /v1 limit is untouched', async () => {
    // Arrange: a client address no other test uses, so that its /v1 count starts at zero.
    const client = '127.0.0.61'

    // Act
    const statuses: number[] = []
    for (const path of ['/healthz', '/readyz']) {
      for (let i = 0; i < 61; i++) statuses.push((await getFrom(client, `${running().origin}${path}`)).status)
    }
    const anonymous = await getFrom(client, `${running().origin}/v1/pets`)

    // Assert
    assert.deepEqual(new Set(statuses), new Set([200]))
    assert.equal(statuses.length, 122)
    assert.equal(anonymous.status, 401)
    assert.equal(anonymous.headers['x-ratelimit-limit'], '60')
    assert.equal(anonymous.headers['x-ratelimit-remaining'], '59')
  })

  it('When a key is created with `keys create --plan free --name x`, then its token is alone on the last line of stdout and the server accepts it', async () => {
    // Act
    const { stdout } = await runCliOk(['keys', 'create', '--plan', 'free', '--name', 'x'], env)

    // Assert
    const lastLine = stdout.trimEnd().split('\n').at(-1) ?? ''
    assert.match(lastLine, TOKEN)
    const response = await call('/v1/pets', { headers: bearer(lastLine) })
    assert.equal(response.status, 200, await response.text())
    assert.equal(response.headers.get('x-ratelimit-limit'), '60')
  })

  it('When a key is created with --json, then stdout is one JSON object with id, name, plan and token', async () => {
    // Act
    const { stdout } = await runCliOk(['keys', 'create', '--plan', 'business', '--name', 'json key', '--json'], env)

    // Assert
    assert.equal(stdout.trimEnd().split('\n').length, 1, stdout)
    const key = JSON.parse(stdout) as Record<string, unknown>
    assert.equal(typeof key.id, 'number')
    assert.equal(key.name, 'json key')
    assert.equal(key.plan, 'business')
    assert.match(String(key.token), TOKEN)
  })

  it('When an enterprise key is created without --per-day, then `keys create` exits 2 (bad usage) with a message and creates no key', async () => {
    // Act
    const result = await runCli(['keys', 'create', '--plan', 'enterprise', '--per-minute', '100', '--name', 'no day limit'], env)
    const listed = await runCliOk(['keys', 'list', '--json'], env)

    // Assert
    assert.equal(result.code, 2, result.stdout + result.stderr)
    assert.match(result.stderr, /--per-day is required for an enterprise key/)
    assert.doesNotMatch(result.stdout, /pet_live_/)
    const keys = JSON.parse(listed.stdout) as Array<{ name: string }>
    assert.ok(keys.length > 0, 'keys list --json listed no key at all')
    assert.equal(keys.filter((k) => k.name === 'no day limit').length, 0, 'the refused key was stored')
  })

  it('When a pet with categoryId 9223372036854775807 is added, then the response text carries exactly those digits', async () => {
    // Act
    const { text } = await addPet({ name: 'Big', categoryId: INT64_MAX })

    // Assert
    assert.ok(text.includes('"categoryId":9223372036854775807'), text)
    assert.ok(!text.includes('9223372036854775808'), text)
  })

  it('When a pet with a categoryId beyond 2^53 is read back by getPet and listPets, then the digits are unchanged', async () => {
    // Arrange
    const { id } = await addPet({ name: 'Unsafe', categoryId: FIRST_UNSAFE_INTEGER, status: 'available' })

    // Act
    const one = await call(`/v1/pets/${id}`, { headers: bearer(token) })
    const list = await call('/v1/pets?limit=100&status=available', { headers: bearer(token) })

    // Assert
    const oneText = await one.text()
    const listText = await list.text()
    assert.equal(one.status, 200, oneText)
    assert.equal(list.status, 200, listText)
    assert.ok(oneText.includes(`"id":${id},`) && oneText.includes('"categoryId":9007199254740993'), oneText)
    assert.ok(listText.includes(`"id":${id},"name":"Unsafe","categoryId":9007199254740993`), listText)
  })

  it('When more pets match than the limit, then Link rel="next" is an absolute URL on the real port that gives the next page', async () => {
    // Arrange: the only pending pets in this database.
    const created = [
      await addPet({ name: 'P1', status: 'pending' }),
      await addPet({ name: 'P2', status: 'pending' }),
      await addPet({ name: 'P3', status: 'pending' })
    ].map((pet) => pet.id)

    // Act
    const first = await call('/v1/pets?limit=2&status=pending', { headers: bearer(token) })
    const next = linkTarget(first.headers.get('link'), 'next')
    assert.ok(next !== undefined, `no Link rel="next": ${first.headers.get('link') ?? 'none'}`)
    const second = await fetch(next, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })

    // Assert
    const url = new URL(next)
    assert.equal(url.origin, running().origin)
    assert.equal(url.pathname, '/v1/pets')
    assert.equal(url.searchParams.get('limit'), '2')
    assert.equal(url.searchParams.get('status'), 'pending')
    assert.ok((url.searchParams.get('cursor') ?? '') !== '', next)
    assert.deepEqual(idsIn(await first.text()), created.slice(0, 2))
    assert.equal(second.status, 200)
    assert.deepEqual(idsIn(await second.text()), created.slice(2))
    assert.equal(linkTarget(second.headers.get('link'), 'next'), undefined)
  })

  it('When a request carries a forged Host and X-Forwarded-Host, then Link still names the service\'s own address', async () => {
    // Arrange
    await addPet({ name: 'S1', status: 'sold' })
    await addPet({ name: 'S2', status: 'sold' })

    // Act
    const response = await rawRequest(running().port, [
      'GET /v1/pets?limit=1&status=sold HTTP/1.1',
      'Host: attacker.example:4444',
      'X-Forwarded-Host: attacker.example',
      'X-Forwarded-Proto: https',
      `Authorization: Bearer ${token}`,
      'Connection: close',
      '', ''
    ].join('\r\n'))

    // Assert
    assert.equal(response.status, 200, response.body)
    const next = linkTarget(response.headers.get('link'), 'next') ?? ''
    assert.ok(next.startsWith(`${running().origin}/v1/pets?`), next)
  })

  it('When getPet answers, then it carries Deprecation, Sunset and absolute successor and deprecation links, on a 404 too', async () => {
    // Arrange
    const { id } = await addPet({ name: 'Old' })
    const origin = running().origin

    // Act
    const found = await call(`/v1/pets/${id}`, { headers: bearer(token) })
    const missing = await call('/v1/pets/9223372036854775806', { headers: bearer(token) })

    // Assert
    assert.equal(found.status, 200)
    assert.equal(missing.status, 404)
    assert.equal(parseErrorBody(await missing.text()).code, 'not_found')
    for (const response of [found, missing]) {
      assert.equal(response.headers.get('deprecation'), '@1795132800')
      assert.equal(response.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT')
      assert.equal(linkTarget(response.headers.get('link'), 'successor-version'), `${origin}/v1/pets`)
      assert.equal(linkTarget(response.headers.get('link'), 'deprecation'), `${origin}/v1/docs`)
    }
  })

  it('When a malformed HTTP request arrives on a socket, then the answer is 400 with a JSON Error body', async () => {
    // Act
    const response = await rawRequest(running().port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nThis is not a header\r\n\r\n')

    // Assert
    assert.equal(response.status, 400)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json\b/)
    const error = parseErrorBody(response.body)
    assert.equal(error.status, 400)
    assert.equal(error.code, 'invalid_request')
    assert.ok(error.message.length > 0)
    assert.equal(response.headers.get('x-ratelimit-limit'), '60', 'counted against the address')
    assert.match(response.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/)
  })

  it('When a request carries a 20 KB header, then the answer is 431 with a JSON Error body', async () => {
    // Act
    const response = await rawRequest(running().port,
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`)

    // Assert
    assert.equal(response.status, 431)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json\b/)
    const error = parseErrorBody(response.body)
    assert.equal(error.status, 431)
    assert.equal(error.code, 'request_header_fields_too_large')
    assert.match(response.headers.get('x-ratelimit-reset') ?? '', /^\d+$/)
    assert.ok(error.message.length > 0)
  })

  it('When an HTTP/1.1 request has no Host header, then the API answers 400 with an Error body and the rate-limit headers, and every other path a 400 Error body without them', async () => {
    // Act
    const api = await rawRequest(running().port, `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    // Under /v1, but outside the gate: the OpenAPI document and the docs page.
    const ungated = await Promise.all(['/healthz', '/v1/openapi.json', '/v1/docs', '/v1/docs/', '/no-such-path']
      .map(async (path) => ({ path, response: await rawRequest(running().port, `GET ${path} HTTP/1.1\r\n\r\n`) })))
    const http10 = await rawRequest(running().port, 'GET /healthz HTTP/1.0\r\n\r\n')

    // Assert
    for (const response of [api, ...ungated.map(({ response }) => response)]) {
      assert.equal(response.status, 400)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json\b/)
      const error = parseErrorBody(response.body)
      assert.equal(error.code, 'invalid_request')
      assert.match(error.message, /Host/)
      assert.equal(response.headers.get('connection'), 'close')
    }
    assert.match(api.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/)
    for (const { path, response } of ungated) assert.equal(response.headers.get('x-ratelimit-limit'), undefined, path)
    assert.equal(http10.status, 200, 'HTTP/1.0 needs no Host')
  })

  it('When a request expects something other than 100-continue, then the answer is 417 with an Error body; 100-continue itself is met', async () => {
    // Act
    const refused = await rawRequest(running().port, `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nExpect: the-impossible\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    const ungated = await rawRequest(running().port, 'GET /v1/openapi.json HTTP/1.1\r\nHost: localhost\r\nExpect: the-impossible\r\n\r\n')
    const body = newPetJson({ name: 'Continued' })
    const continued = await rawRequest(running().port, [
      'POST /v1/pets HTTP/1.1', 'Host: localhost', 'Expect: 100-continue', `Authorization: Bearer ${token}`, 'Connection: close',
      'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`, '', body
    ].join('\r\n'))

    // Assert
    assert.equal(refused.status, 417)
    assert.equal(parseErrorBody(refused.body).code, 'expectation_failed')
    assert.match(refused.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/)
    assert.match(refused.headers.get('x-request-id') ?? '', /.+/)
    assert.equal(ungated.status, 417)
    assert.equal(parseErrorBody(ungated.body).code, 'expectation_failed')
    assert.equal(ungated.headers.get('x-ratelimit-limit'), undefined)
    // A 100 Continue precedes the final answer.
    assert.equal(continued.status, 100)
    assert.match(continued.body, /^HTTP\/1\.1 201 /)
  })

  it('When a CONNECT request arrives, then the answer is 400 with an Error body, not a closed connection', async () => {
    const response = await rawRequest(running().port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')

    assert.equal(response.status, 400)
    assert.equal(parseErrorBody(response.body).code, 'invalid_request')
    assert.match(response.headers.get('x-ratelimit-limit') ?? '', /^\d+$/)
  })

  it('When a key is revoked with `keys revoke ID`, then the running server refuses it with 401 within one second and `keys list --json` shows it revoked', async () => {
    // Arrange: the server has just accepted the key (and may remember that).
    const key = await createKey(env, ['--plan', 'free', '--name', 'to revoke'])
    const accepted = await call('/v1/pets?limit=1', { headers: bearer(key.token) })
    assert.equal(accepted.status, 200)

    // Act
    await runCliOk(['keys', 'revoke', String(key.id)], env)
    const revokedAt = Date.now()
    const refused = await pollUntil(async () => {
      const response = await call('/v1/pets?limit=1', { headers: bearer(key.token) })
      return response.status === 401 ? response : undefined
    }, { ms: 15_000, every: 50, what: 'the revoked key to be refused' })
    const elapsed = Date.now() - revokedAt
    const listed = await runCliOk(['keys', 'list', '--json'], env)

    // Assert
    // The contract is one second (a 500 ms cache); 5 s leaves a loaded machine room and still fails a lookup kept for long.
    assert.ok(elapsed <= 5_000, `refused only after ${elapsed} ms`)
    assert.equal(parseErrorBody(await refused.text()).code, 'invalid_api_key')
    assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
    const keys = JSON.parse(listed.stdout) as Array<{ id: number, revoked: boolean }>
    assert.equal(keys.find((k) => k.id === key.id)?.revoked, true)
    assert.equal(keys.find((k) => k.id !== key.id)?.revoked, false)
    assert.ok(!listed.stdout.includes(key.token), 'keys list printed a secret')
  })

  it('When a staging key is sent to the production server, then it is refused with 401 and a message naming the environments', async () => {
    // Arrange
    const staging = await createKey({ ...env, PETSTORE_ENV: 'staging' }, ['--plan', 'free', '--name', 'staging'])

    // Act
    const response = await call('/v1/pets', { headers: bearer(staging.token) })

    // Assert
    assert.match(staging.token, /^pet_test_/)
    assert.equal(response.status, 401)
    const error = parseErrorBody(await response.text())
    assert.equal(error.code, 'invalid_api_key')
    assert.equal(error.status, 401)
    assert.match(error.message, /staging/)
    assert.match(error.message, /production/)
  })
})

// Each with a server of its own: a signal sent to the one shared above
// would end every test that came after it.
describe('petstore serve, stopped by a signal or an error nothing caught', { timeout: 60_000 }, () => {
  let dir: string | undefined
  const servers: ServerProcess[] = []

  before(() => { dir = makeTempDir() })
  after(async () => {
    await Promise.all(servers.map(async (server) => { await server.dispose() }))
    removeTempDir(dir)
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`When the server receives ${signal}, then it logs its stop and exits with code 0`, async () => {
      // Arrange
      const server = await startServer({ DATABASE_URL: sqliteUrl(dir ?? '') })
      servers.push(server)

      // Act
      server.signal(signal)
      const status = await server.waitForExit(10_000)

      // Assert
      assert.deepEqual(status, { code: 0, signal: null })
      assert.match(server.stdout, new RegExp(`"signal":"${signal}".*"msg":"shutting down: finishing requests in flight"`))
      assert.match(server.stdout, /"msg":"stopped"/)
    })
  }

  it('When an exception nothing catches is thrown, then it is logged at fatal and the process exits with code 1', async () => {
    // Arrange: the service, with a module loaded first that throws, outside any request, on SIGUSR2.
    const thrower = 'data:text/javascript,process.on("SIGUSR2",()=>setImmediate(()=>{throw new Error("nothing caught this")}))'
    const server = await startServer({ DATABASE_URL: sqliteUrl(dir ?? '') }, 15_000, ['--import', thrower, CLI, 'serve'])
    servers.push(server)

    // Act
    server.signal('SIGUSR2')
    const status = await server.waitForExit(10_000)

    // Assert
    assert.deepEqual(status, { code: 1, signal: null })
    assert.match(server.stdout, /"level":60,.*"message":"nothing caught this".*"msg":"uncaught exception: exiting"/)
  })
})

describe('petstore serve, its logs', { timeout: 30_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined

  after(async () => {
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When keys of every kind have been sent and the server has stopped, then no token appears in its stdout or stderr', async () => {
    // Arrange: the most verbose level, so that every line the service can log is checked.
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const valid = await createKey(env, ['--plan', 'pro', '--name', 'logs'])
    const revoked = await createKey(env, ['--plan', 'free', '--name', 'revoked'])
    await runCliOk(['keys', 'revoke', String(revoked.id)], env)
    const running = server = await startServer({ ...env, LOG_LEVEL: 'trace' })
    const mistyped = `${valid.token.slice(0, -1)}${valid.token.endsWith('x') ? 'y' : 'x'}`
    const tokens = [valid.token, revoked.token, mistyped, generateToken('production'), generateToken('staging')]
    const send = async (path: string, init: RequestInit): Promise<void> => {
      const response = await fetch(`${running.origin}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      await response.arrayBuffer()
    }

    // Act
    for (const token of tokens) {
      await send('/v1/pets?limit=1', { headers: bearer(token) })
      await send('/v1/pets', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': `logs-${token.slice(-6)}` }, body: newPetJson() })
      await send('/v1/nowhere', { headers: bearer(token) })
      await send('/v1/pets?limit=1', { headers: { authorization: `Bearer ${token} ${token}` } })
    }
    const exit = await running.stop()

    // Assert: the logs did record the requests, just not their secrets.
    assert.deepEqual(exit, { code: 0, signal: null })
    const logs = running.stdout + running.stderr
    assert.match(logs, /"url":"\/v1\/pets/)
    for (const token of tokens) {
      assert.ok(!logs.includes(token), `a token is in the logs: ${token.slice(0, 12)}…`)
      assert.ok(!logs.includes(token.slice('pet_live_'.length, -6)), `a token's secret part is in the logs: ${token.slice(0, 12)}…`)
    }
  })
})

describe('petstore serve, stopped with a request in flight', { timeout: 30_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let connection: RawConnection | undefined

  after(async () => {
    connection?.close()
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When SIGTERM arrives while a POST is still arriving on a keep-alive connection, then the POST gets its 201 and the process exits with code 0', async () => {
    // Arrange: the request's headers have reached the server; half its body has not.
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createKey(env, ['--plan', 'pro', '--name', 'in flight'])
    // At debug, a line says when a request has arrived.
    server = await startServer({ ...env, LOG_LEVEL: 'debug' })
    const running = server
    const body = newPetJson({ name: 'Late', categoryId: INT64_MAX })
    connection = await RawConnection.open(running.port)
    connection.write([
      'POST /v1/pets HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${token}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      '', body.slice(0, 10)
    ].join('\r\n'))
    await running.waitForStdout((out) => /"method":"POST","url":"\/v1\/pets","msg":"request received"/.test(out), 5_000, 'the POST to reach the server')

    // Act
    running.signal('SIGTERM')
    await running.waitForStdout((out) => out.includes('shutting down'), 5_000, 'the server to start shutting down')
    connection.write(body.slice(10))
    const received = await connection.waitFor((text) => isCompleteResponse(text), 5_000, 'the response to the POST in flight')
    const exit = await running.waitForExit(5_000).catch((error: unknown) => error)

    // Assert
    const response = parseRawResponse(received)
    assert.equal(response.status, 201, response.body)
    assert.ok(response.body.includes('"categoryId":9223372036854775807'), response.body)
    assert.deepEqual(exit, { code: 0, signal: null },
      `the process had not exited 5 s after answering its last request (connection: ${response.headers.get('connection') ?? 'unset'})`)
  })
})
