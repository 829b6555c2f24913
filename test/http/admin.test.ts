// The admin port (ADMIN_PORT): the public server's connection timeouts and
// the service's Error body. Regression: "the admin listener keeps Fastify's
// default timeouts and its default 404 body".
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { DEFAULT_TIMEOUTS } from '../../src/http/edge.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { createMetrics } from '../../src/telemetry/metrics.js'
import { errorOf } from '../support/app.js'
import { RawConnection, isCompleteResponse, parseRawResponse } from '../support/process.js'

describe('the admin listener keeps Fastify\'s default timeouts and its default 404 body', () => {
  let storage: Storage
  let admin: FastifyInstance
  let port = 0
  before(async () => {
    storage = openSqlite('sqlite::memory:')
    const metrics = createMetrics({ limiter: new MemoryStore(), poolUse: () => storage.poolUse(), droppedLogLines: () => 0 })
    admin = await buildAdminApp({ metrics })
    await admin.listen({ host: '127.0.0.1', port: 0 })
    port = (admin.server.address() as AddressInfo).port
  })
  after(async () => {
    await admin.close()
    await storage.close()
  })

  it('When the admin app is built, then its server has the public server\'s connection timeouts', () => {
    // Act
    const server = admin.server

    // Assert
    assert.equal(server.headersTimeout, DEFAULT_TIMEOUTS.headersMs)
    assert.equal(server.requestTimeout, DEFAULT_TIMEOUTS.requestMs)
    assert.equal(server.keepAliveTimeout, DEFAULT_TIMEOUTS.keepAliveMs)
    assert.equal(server.timeout, DEFAULT_TIMEOUTS.idleSocketMs)
  })

  it('When /healthz is asked on the admin port, without a token, then it answers 200 as on the public port, for a liveness probe that does not queue behind the public port\'s clients', async () => {
    // Act
    const response = await fetch(`http://127.0.0.1:${port}/healthz`)

    // Assert
    assert.equal(response.status, 200)
    assert.deepEqual(await response.json(), { status: 'ok' })
  })

  it('When a path does not exist on the admin port, then 404 not_found as the Error body', async () => {
    // Act
    const response = await admin.inject({ url: '/nothing-here' })

    // Assert
    assert.equal(response.statusCode, 404)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    assert.deepEqual(errorOf(response), { code: 'not_found', message: 'Nothing is at GET /nothing-here.', status: 404 })
  })

  it('When a URL on the admin port cannot be decoded, then 400 invalid_request as the Error body', async () => {
    // Act
    const response = await admin.inject({ url: '/metrics/%zz' })

    // Assert
    assert.equal(response.statusCode, 400)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    assert.deepEqual(Object.keys(errorOf(response)).sort(), ['code', 'message', 'status'])
    assert.equal(errorOf(response).code, 'invalid_request')
  })

  it('When Node\'s parser refuses a request on the admin port, then 400 invalid_request as the Error body', async () => {
    // Arrange
    const connection = await RawConnection.open(port)
    try {
      // Act
      connection.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n')
      const received = await connection.waitFor((text) => isCompleteResponse(text), 5_000, 'the answer')

      // Assert
      const response = parseRawResponse(received)
      assert.equal(response.status, 400)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal((JSON.parse(response.body) as { code: string }).code, 'invalid_request')
    } finally {
      connection.close()
    }
  })

  it('When /metrics is scraped, then it answers in Prometheus\'s text format', async () => {
    // Act
    const response = await admin.inject({ url: '/metrics' })

    // Assert
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  })
})
