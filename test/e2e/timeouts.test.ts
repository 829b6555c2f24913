// Slow clients over a real socket: the server cuts them off instead of
// holding the connection. The timeouts are shortened so the test is quick,
// and set far apart, so that the elapsed time tells which one closed the
// connection. Under `npm run test:soak` more slow clients come at once.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { get as httpGet } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { buildApp } from '../../src/http/app.js'
import { loadConfig } from '../../src/config.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { issueKey } from '../../src/keys/manage.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { range } from '../support/load.js'
import { pollUntil } from '../support/process.js'
import { iterations } from '../support/soak.js'

/** Everything the socket received until the server closed it, and how long that took. */
function untilClosed (socket: Socket, limitMs: number): Promise<{ text: string, ms: number }> {
  const started = Date.now()
  let text = ''
  socket.on('data', (chunk) => { text += chunk.toString('latin1') })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`the server kept the connection for ${limitMs} ms`)) }, limitMs)
    socket.on('close', () => { clearTimeout(timer); resolve({ text, ms: Date.now() - started }) })
    socket.on('error', () => {})
  })
}

interface Timeouts { headersMs: number, requestMs: number, keepAliveMs: number, idleSocketMs?: number }

/** The app on a real port, with these timeouts, checked every 50 ms; its storage holds one business key, whose 100 requests in flight cover the slow clients. */
async function listening (timeouts: Timeouts): Promise<{ port: number, token: string, connections: () => Promise<number>, close: () => Promise<void> }> {
  const storage = openSqlite('sqlite::memory:')
  const limiter = new MemoryStore()
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:' })
  const app = await buildApp({ config, storage, limiter, timeouts: { ...timeouts, checkEveryMs: 50 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const key = await issueKey(storage, {
    plan: 'business', name: 'slow client', perMinute: undefined, perDay: undefined, environment: config.environment, now: Date.now()
  })
  return {
    port: (app.server.address() as AddressInfo).port,
    token: key.token,
    /** Sockets the server holds open. */
    connections: async () => await new Promise<number>((resolve, reject) => {
      app.server.getConnections((error, count) => { if (error === null) resolve(count); else reject(error) })
    }),
    async close () {
      await app.close()
      await storage.close()
      await limiter.close()
    }
  }
}

/** Timer checks run every 50 ms on a machine that may be busy: this much late is still on time. */
const SLACK_MS = 2_000
/** Date.now() and the server's monotonic clock may round apart by a few ms. */
const EARLY_MS = 20
/** Where a timeout is the contract itself: it must not close early, and may close this late on a loaded machine. */
const LOADED_SLACK_MS = 10_000

describe('connection timeouts: headers and keep-alive', () => {
  // The request timeout is far past the headers timeout and a loaded machine's slack: only the headers timeout can close the first connection.
  const timeouts = { headersMs: 300, requestMs: 30_000, keepAliveMs: 300 }
  let server: Awaited<ReturnType<typeof listening>>
  before(async () => { server = await listening(timeouts) })
  after(async () => { await server.close() })

  it('When a client sends its headers too slowly, then the headers timeout answers 408 as an Error body and closes the connection', async () => {
    // Arrange
    const socket = connect(server.port, '127.0.0.1')

    // Act
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n')
    const { text, ms } = await untilClosed(socket, timeouts.headersMs + LOADED_SLACK_MS + 1_000)

    // Assert
    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.match(text, /"status":408/)
    assert.ok(ms >= timeouts.headersMs - EARLY_MS, `closed after ${ms} ms, before the headers timeout`)
    // Loose for a loaded machine, and still far before the request timeout could close it.
    assert.ok(ms <= timeouts.headersMs + LOADED_SLACK_MS, `closed after ${ms} ms: by the request timeout, not the headers timeout`)
  })

  it('When a keep-alive connection stays idle, then the server closes it', async () => {
    const socket = connect(server.port, '127.0.0.1')
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
    const { text } = await untilClosed(socket, 5000)

    assert.match(text, /^HTTP\/1\.1 200 /)
    assert.match(text, /Connection: keep-alive/i, 'the server offered keep-alive, then ended it')
  })
})

describe('connection timeouts: a body that stops arriving', () => {
  // The keep-alive timeout is far longer than the request timeout: only the request timeout can close this connection.
  const timeouts = { headersMs: 300, requestMs: 1_000, keepAliveMs: 30_000 }
  let server: Awaited<ReturnType<typeof listening>>
  before(async () => { server = await listening(timeouts) })
  after(async () => { await server.close() })

  it('When a client with a valid key stops sending its body, then the request timeout answers 408 as an Error body and closes the connection', async () => {
    // Arrange: a request the gate lets through, so that it waits for its body.
    const socket = connect(server.port, '127.0.0.1')

    // Act
    socket.write([
      'POST /v1/pets HTTP/1.1',
      'Host: localhost',
      `Authorization: Bearer ${server.token}`,
      'Content-Type: application/json',
      'Content-Length: 100',
      '', '{"name":'
    ].join('\r\n'))
    const { text, ms } = await untilClosed(socket, timeouts.requestMs + LOADED_SLACK_MS + 1_000)

    // Assert
    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.ok(ms >= timeouts.requestMs - EARLY_MS, `closed after ${ms} ms, before the request timeout`)
    assert.ok(ms <= timeouts.requestMs + LOADED_SLACK_MS, `closed only after ${ms} ms`)
  })
})

/**
 * GET /healthz, each on a new connection, one after another until stopped:
 * what a load balancer's health check sees while slow clients hold
 * connections. Keeps the slowest answer and any that was not a 200.
 */
class Probe {
  readonly failures: string[] = []
  slowestMs = 0
  count = 0
  #stopped = false
  readonly #running: Promise<void>

  constructor (port: number) {
    this.#running = this.#loop(port)
  }

  async stop (): Promise<void> {
    this.#stopped = true
    await this.#running
  }

  async #loop (port: number): Promise<void> {
    while (!this.#stopped) {
      const started = Date.now()
      try {
        const status = await new Promise<number>((resolve, reject) => {
          const request = httpGet({ host: '127.0.0.1', port, path: '/healthz', agent: false, signal: AbortSignal.timeout(5_000) }, (response) => {
            response.resume()
            response.once('end', () => resolve(response.statusCode ?? 0))
          })
          request.once('error', reject)
        })
        if (status !== 200) this.failures.push(`status ${status}`)
      } catch (error) {
        this.failures.push(String(error))
      }
      this.count++
      this.slowestMs = Math.max(this.slowestMs, Date.now() - started)
      await delay(PROBE_EVERY_MS)
    }
  }
}

/** Writes `text` one byte every `everyMs`, then `filler` bytes for ever, until the server closes the socket. */
function trickle (socket: Socket, text: string, filler: string, everyMs: number): void {
  let i = 0
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) return
    socket.write(i < text.length ? text.charAt(i) : filler)
    i++
  }, everyMs)
  socket.once('close', () => clearInterval(timer))
}

/** A health check every this long while slow clients hold their connections. */
const PROBE_EVERY_MS = 20
/** "Answers fast": far below any timeout here, and above what a busy two-core test machine adds. */
const PROBE_FAST_MS = 500

/** Every health check got its 200, none slowed by the clients that hold connections. */
function assertAnsweredFast (probe: Probe): void {
  assert.deepEqual(probe.failures, [])
  assert.ok(probe.slowestMs < PROBE_FAST_MS, `a probe took ${probe.slowestMs} ms`)
}

/** Every connection got a 408 Error body and was closed at `timeoutMs`, give or take the test machine's slack. */
function assertTimedOutAt (results: Array<{ text: string, ms: number }>, timeoutMs: number): void {
  for (const { text, ms } of results) {
    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.ok(ms >= timeoutMs - EARLY_MS && ms <= timeoutMs + SLACK_MS, `closed after ${ms} ms`)
  }
}
/** Node keeps an idle keep-alive socket this much longer than the Keep-Alive timeout it advertises (a buffer against clients racing it). */
const KEEP_ALIVE_BUFFER_MS = 1_000
/** Slow clients at once, per test; more under `npm run test:soak`. */
const SLOW_CLIENTS = iterations(50, 200)
/** Idle connections held at once. */
const IDLE_CONNECTIONS = iterations(500, 1_000)

describe('slow clients, while a health probe keeps answering', { timeout: 120_000 }, () => {
  // Far apart, so that the time a connection lasted tells which timeout closed it;
  // the idle-socket timeout is left at its default (120 s), so it closes nothing here.
  const timeouts = { headersMs: 500, requestMs: 2_000, keepAliveMs: 1_000 }
  let server: Awaited<ReturnType<typeof listening>>
  before(async () => { server = await listening(timeouts) })
  after(async () => { await server.close() })

  it(`When ${SLOW_CLIENTS} clients trickle their headers one byte every 50 ms, then each gets 408 as an Error body at the headers timeout and its connection is closed, while a probe answers fast`, async (t) => {
    // Arrange
    const probe = new Probe(server.port)
    const sockets = Array.from({ length: SLOW_CLIENTS }, () => connect(server.port, '127.0.0.1'))

    // Act
    const closed = sockets.map(async (socket) => await untilClosed(socket, 10_000))
    for (const socket of sockets) trickle(socket, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', 'a', 50)
    const results = await Promise.all(closed)
    await probe.stop()

    // Assert
    const ms = results.map((r) => r.ms)
    t.diagnostic(`${SLOW_CLIENTS} trickling headers: closed after ${range(ms)} ms (headers timeout ${timeouts.headersMs} ms); ` +
      `probe: ${probe.count} answers, slowest ${probe.slowestMs} ms`)
    assertTimedOutAt(results, timeouts.headersMs)
    assertAnsweredFast(probe)
  })

  it(`When ${SLOW_CLIENTS} clients with a valid key trickle their bodies one byte every 100 ms, then each gets 408 as an Error body at the request timeout and its connection is closed, while a probe answers fast`, async (t) => {
    // Arrange: requests the gate lets through, so that each waits for its body.
    const probe = new Probe(server.port)
    const sockets = Array.from({ length: SLOW_CLIENTS }, () => connect(server.port, '127.0.0.1'))
    const head = ['POST /v1/pets HTTP/1.1', 'Host: localhost', `Authorization: Bearer ${server.token}`,
      'Content-Type: application/json', 'Content-Length: 10000', '', ''].join('\r\n')

    // Act
    const closed = sockets.map(async (socket) => await untilClosed(socket, 10_000))
    for (const socket of sockets) {
      socket.write(head)
      trickle(socket, '{"name":"', 'a', 100)
    }
    const results = await Promise.all(closed)
    await probe.stop()

    // Assert
    const ms = results.map((r) => r.ms)
    t.diagnostic(`${SLOW_CLIENTS} trickling bodies: closed after ${range(ms)} ms (request timeout ${timeouts.requestMs} ms); ` +
      `probe: ${probe.count} answers, slowest ${probe.slowestMs} ms`)
    assertTimedOutAt(results, timeouts.requestMs)
    assertAnsweredFast(probe)
  })

  it(`When ${IDLE_CONNECTIONS} connections are left idle, half before sending anything and half after one request, then each is closed by its own timeout, while a probe answers fast`, async (t) => {
    // Arrange
    const count = IDLE_CONNECTIONS
    const probe = new Probe(server.port)
    const silent = Array.from({ length: count / 2 }, () => connect(server.port, '127.0.0.1'))
    const kept = Array.from({ length: count / 2 }, () => connect(server.port, '127.0.0.1'))

    // Act
    const silentClosed = silent.map(async (socket) => await untilClosed(socket, 10_000))
    const keptClosed = kept.map(async (socket) => {
      // From its answer on, the connection is idle.
      let answeredAt = Number.NaN
      socket.once('data', () => { answeredAt = Date.now() })
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
      const { text } = await untilClosed(socket, 10_000)
      return { text, ms: Date.now() - answeredAt }
    })
    const [quiet, idle] = await Promise.all([Promise.all(silentClosed), Promise.all(keptClosed)])
    await probe.stop()
    const held = await server.connections()

    // Assert
    const msRange = (results: Array<{ ms: number }>): string => `${range(results.map((r) => r.ms))} ms`
    t.diagnostic(`${count} idle connections: ${quiet.length} silent ones closed after ${msRange(quiet)} (headers timeout ${timeouts.headersMs} ms), ` +
      `${idle.length} idle keep-alive ones ${msRange(idle)} after their answer (keep-alive timeout ${timeouts.keepAliveMs} ms); ` +
      `probe: ${probe.count} answers, slowest ${probe.slowestMs} ms`)
    for (const { text, ms } of quiet) {
      assert.match(text, /^HTTP\/1\.1 408 /)
      assert.ok(ms >= timeouts.headersMs - EARLY_MS && ms <= timeouts.headersMs + SLACK_MS, `a silent connection closed after ${ms} ms`)
    }
    for (const { text, ms } of idle) {
      assert.match(text, /^HTTP\/1\.1 200 /)
      assert.ok(ms >= timeouts.keepAliveMs - EARLY_MS && ms <= timeouts.keepAliveMs + KEEP_ALIVE_BUFFER_MS + SLACK_MS, `an idle keep-alive connection closed after ${ms} ms`)
    }
    assert.equal(held, 0)
    assertAnsweredFast(probe)
  })

  it('When clients that got a 408 never close their side of the connection, then the server closes it anyway, long before the idle-socket timeout', async (t) => {
    // Arrange: half-open sockets, so that the server's FIN alone does not end them.
    const sockets = Array.from({ length: SLOW_CLIENTS }, () => connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true }))
    const answered = sockets.map(async (socket) => await new Promise<void>((resolve) => {
      socket.on('error', () => {})
      socket.resume()
      socket.once('end', () => resolve())
    }))
    for (const socket of sockets) socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n')

    // Act
    let closedMs: number
    try {
      await Promise.all(answered)
      const answeredAt = Date.now()
      await pollUntil(async () => await server.connections() === 0 ? true : undefined, { ms: 10_000, every: 20, what: 'the server to close the half-open sockets' })
      closedMs = Date.now() - answeredAt
    } finally {
      for (const socket of sockets) socket.destroy()
    }

    // Assert
    t.diagnostic(`${SLOW_CLIENTS} half-open clients answered 408: the server held their sockets ${closedMs} ms more`)
    assert.ok(closedMs <= 1_000 + SLACK_MS, `the server held the sockets ${closedMs} ms after answering`)
  })
})
