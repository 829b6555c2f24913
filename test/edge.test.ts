// The edge is Fastify's server: it gets Fastify's handler once, sets the
// connection timeouts Fastify no longer sets, and leaves Node's methods as
// they are.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildTestApp, type TestApp } from './support/app.js'
import { RawConnection, isCompleteResponse, parseRawResponse } from './support/process.js'

describe('the edge', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({}, { timeouts: { headersMs: 1_001, requestMs: 2_002, keepAliveMs: 3_003, idleSocketMs: 4_004 } })
  })
  after(async () => { await t.close() })

  it('When the app is built, then its server has one request listener, Fastify\'s through the edge, and none was removed to get there', () => {
    assert.equal(t.app.server.listenerCount('request'), 1)
    assert.equal(t.app.server.listenerCount('checkExpectation'), 1)
    assert.equal(t.app.server.listenerCount('connect'), 1)
    assert.equal(t.app.server.listenerCount('clientError'), 1)
  })

  it('When the app is built, then the server has the connection timeouts it was given', () => {
    const server = t.app.server
    assert.equal(server.headersTimeout, 1_001)
    assert.equal(server.requestTimeout, 2_002)
    assert.equal(server.keepAliveTimeout, 3_003)
    assert.equal(server.timeout, 4_004)
  })

  it('When the app is built, then Node\'s closeIdleConnections is its own, not replaced', () => {
    assert.equal(t.app.server.closeIdleConnections, Server.prototype.closeIdleConnections)
  })
})

describe('the edge, listening', () => {
  let t: TestApp
  let port = 0
  let token = ''
  before(async () => {
    t = await buildTestApp()
    token = await t.newKey('pro')
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
  })
  after(async () => { await t.close() })

  for (const { what, method, keyed, status } of [
    { what: 'a keyless POST', method: 'POST', keyed: false, status: 401 },
    { what: 'a keyed DELETE', method: 'DELETE', keyed: true, status: 405 },
    { what: 'a keyed POST', method: 'POST', keyed: true, status: 413 }
  ]) {
    it(`When ${what} declares a body of 1 GB, then it is answered ${status} with Connection: close and the connection closes, the body unread (regression: unlimited body draining)`, async () => {
      // Arrange
      const connection = await RawConnection.open(port)
      const authorization = keyed ? `Authorization: Bearer ${token}\r\n` : ''

      try {
        // Act: the headers and a first 64 KiB of the body, as a client streaming it would send them.
        connection.write(`${method} /v1/pets HTTP/1.1\r\nHost: localhost\r\n${authorization}Content-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n\r\n`)
        connection.write('x'.repeat(64 * 1024))
        const received = await connection.waitFor((text, ended) => ended && isCompleteResponse(text), 5_000, 'the answer, then the connection closed')

        // Assert
        const response = parseRawResponse(received)
        assert.equal(response.status, status)
        assert.equal(response.headers.get('connection'), 'close')
      } finally {
        connection.close()
      }
    })
  }
})
