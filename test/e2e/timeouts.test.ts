// Slow clients over a real socket: the server cuts them off instead of
// holding the connection. The timeouts are shortened so the test is quick,
// and set far apart, so that the elapsed time tells which one closed the
// connection.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openSqlite } from '../../src/db/sqlite.js'
import { issueKey } from '../../src/keys/admin.js'
import { MemoryStore } from '../../src/limits/memory-store.js'

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

interface Timeouts { headersMs: number, requestMs: number, keepAliveMs: number }

/** The app on a real port, with these timeouts, checked every 50 ms; its storage holds one free key. */
async function listening (timeouts: Timeouts): Promise<{ port: number, token: string, close: () => Promise<void> }> {
  const storage = openSqlite('sqlite::memory:')
  const limiter = new MemoryStore()
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:' })
  const app = await buildApp({ config, storage, limiter, timeouts: { ...timeouts, checkEveryMs: 50 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const key = await issueKey(storage, {
    plan: 'free', name: 'slow client', perMinute: undefined, perDay: undefined, environment: config.environment, now: Date.now()
  })
  return {
    port: (app.server.address() as AddressInfo).port,
    token: key.token,
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

describe('connection timeouts: headers and keep-alive', () => {
  const timeouts = { headersMs: 300, requestMs: 3_000, keepAliveMs: 300 }
  let server: Awaited<ReturnType<typeof listening>>
  before(async () => { server = await listening(timeouts) })
  after(async () => { await server.close() })

  it('When a client sends its headers too slowly, then the headers timeout answers 408 as an Error body and closes the connection', async () => {
    // Arrange
    const socket = connect(server.port, '127.0.0.1')

    // Act
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n')
    const { text, ms } = await untilClosed(socket, 5000)

    // Assert
    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.match(text, /"status":408/)
    assert.ok(ms >= timeouts.headersMs - EARLY_MS, `closed after ${ms} ms, before the headers timeout`)
    assert.ok(ms < timeouts.requestMs - EARLY_MS, `closed after ${ms} ms: by the request timeout, not the headers timeout`)
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
    const { text, ms } = await untilClosed(socket, 10_000)

    // Assert
    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.ok(ms >= timeouts.requestMs - EARLY_MS, `closed after ${ms} ms, before the request timeout`)
    assert.ok(ms <= timeouts.requestMs + SLACK_MS, `closed only after ${ms} ms`)
  })
})
