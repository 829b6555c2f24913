// The edge is Fastify's server: it gets Fastify's handler once, sets the
// connection timeouts Fastify no longer sets, and leaves Node's methods as
// they are.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Server } from 'node:http'
import { buildTestApp, type TestApp } from './support/app.js'

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
