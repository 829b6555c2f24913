// Regression: "API responses carry no X-Content-Type-Options: nosniff and no
// Cache-Control: no-store". Every answer tells browsers not to sniff its
// type; every JSON answer (per key, stamped with its rate-limit state) tells
// caches not to keep it, whoever wrote it: a route, the error handler, the
// router, or the edge by hand on the socket.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPet } from '../support/fixtures.js'
import { RawConnection, isCompleteResponse, parseRawResponse } from '../support/process.js'

describe('API responses carry no X-Content-Type-Options: nosniff and no Cache-Control: no-store', () => {
  let t: TestApp
  let token: string
  let spent: string
  let port = 0
  before(async () => {
    t = await buildTestApp()
    token = await t.newKey('pro')
    spent = await t.newKey('free', { perMinute: 1 })
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
  })
  after(async () => { await t.close() })

  const json: Array<[string, () => Promise<{ statusCode: number, headers: Record<string, unknown> }>, number]> = [
    ['GET /v1/pets with a key', async () => await t.app.inject({ url: '/v1/pets', headers: bearer(token) }), 200],
    ['POST /v1/pets with a key', async () => await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: JSON.stringify(buildPet()) }), 201],
    ['GET /v1/pets without a key', async () => await t.app.inject({ url: '/v1/pets' }), 401],
    ['an unknown path under /v1', async () => await t.app.inject({ url: '/v1/animals', headers: bearer(token) }), 404],
    ['a known path and another method', async () => await t.app.inject({ method: 'DELETE', url: '/v1/pets', headers: bearer(token) }), 405],
    ['a URL the router cannot decode', async () => await t.app.inject({ url: '/v1/pets/%zz', headers: bearer(token) }), 400],
    ['a spent key', async () => {
      await t.app.inject({ url: '/v1/pets', headers: bearer(spent) })
      return await t.app.inject({ url: '/v1/pets', headers: bearer(spent) })
    }, 429],
    ['an unknown path outside /v1', async () => await t.app.inject({ url: '/pets' }), 404],
    ['GET /healthz', async () => await t.app.inject({ url: '/healthz' }), 200],
    ['GET /readyz', async () => await t.app.inject({ url: '/readyz' }), 200],
    ['GET /v1/openapi.json', async () => await t.app.inject({ url: '/v1/openapi.json' }), 200]
  ]
  for (const [when, send, status] of json) {
    it(`When ${when} is answered ${status}, then it carries X-Content-Type-Options: nosniff and Cache-Control: no-store`, async () => {
      // Act
      const response = await send()

      // Assert
      assert.equal(response.statusCode, status)
      assert.equal(response.headers['x-content-type-options'], 'nosniff')
      assert.equal(response.headers['cache-control'], 'no-store')
    })
  }

  it('When a static file of the docs page is served, then it carries nosniff and stays cacheable by revalidation', async () => {
    // Act
    const response = await t.app.inject({ url: '/v1/docs/static/swagger-ui.css' })

    // Assert
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers['x-content-type-options'], 'nosniff')
    assert.notEqual(response.headers['cache-control'], 'no-store')
    assert.ok(response.headers.etag, 'a cache can revalidate it')
  })

  for (const [when, request] of [
    ['a header line the parser refuses', 'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n'],
    ['a CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
    ['a method no router routes', 'PRI /v1/pets HTTP/1.1\r\nHost: localhost\r\n\r\n']
  ] as const) {
    it(`When the edge answers ${when} by hand, then the answer carries nosniff and no-store`, async () => {
      // Arrange
      const connection = await RawConnection.open(port)
      try {
        // Act
        connection.write(request)
        const received = await connection.waitFor((text) => isCompleteResponse(text), 5_000, 'the answer')

        // Assert
        const response = parseRawResponse(received)
        assert.equal(response.status, 400)
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
        assert.equal(response.headers.get('cache-control'), 'no-store')
      } finally {
        connection.close()
      }
    })
  }
})
