// Slow clients over a real socket: the server cuts them off instead of
// holding the connection. The timeouts are shortened so the test is quick.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openSqlite } from '../../src/db/sqlite.js'
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

describe('connection timeouts', () => {
  let app: FastifyInstance
  let port: number
  const storage = openSqlite('sqlite::memory:')
  const limiter = new MemoryStore()

  before(async () => {
    app = await buildApp({
      config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }),
      storage,
      limiter,
      timeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 300, checkEveryMs: 50 }
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    port = (app.server.address() as AddressInfo).port
  })
  after(async () => {
    await app.close()
    await storage.close()
    await limiter.close()
  })

  it('When a client sends its headers too slowly, then it gets 408 as an Error body and the connection closes', async () => {
    const socket = connect(port, '127.0.0.1')
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n')
    const { text } = await untilClosed(socket, 5000)

    assert.match(text, /^HTTP\/1\.1 408 /)
    assert.match(text, /"code":"request_timeout"/)
    assert.match(text, /"status":408/)
  })

  it('When a client stops sending its body, then the connection is closed', async () => {
    const socket = connect(port, '127.0.0.1')
    socket.write('POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":')
    const { ms } = await untilClosed(socket, 5000)

    assert.ok(ms >= 250, `closed after ${ms} ms`)
  })

  it('When a keep-alive connection stays idle, then the server closes it', async () => {
    const socket = connect(port, '127.0.0.1')
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
    const { text } = await untilClosed(socket, 5000)

    assert.match(text, /^HTTP\/1\.1 200 /)
    assert.match(text, /Connection: keep-alive/i, 'the server offered keep-alive, then ended it')
  })
})
