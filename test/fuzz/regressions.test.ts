// What the fuzz tests found, each pinned by the request that showed it.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildTestApp, jsonHeaders, type TestApp } from '../support/app.js'
import { OpenApiChecker, receivedOf } from '../support/openapi-check.js'
import type { AddressInfo } from 'node:net'
import { RawConnection, parseErrorBody, parseRawResponse } from '../support/process.js'

describe('regressions found by fuzzing', () => {
  let subject: TestApp
  let checker: OpenApiChecker
  let key: string

  before(async () => {
    subject = await buildTestApp()
    checker = new OpenApiChecker((await subject.app.inject({ url: '/v1/openapi.json' })).body)
    key = await subject.newKey('enterprise', { perMinute: 1000, perDay: 1000 })
  })

  after(async () => {
    await subject.close()
  })

  test('Regression: When a request to any operation carries an Expect other than 100-continue, then its 417 is a status the document gives that operation', async () => {
    const requests = [
      { method: 'GET' as const, url: '/v1/pets' },
      { method: 'POST' as const, url: '/v1/pets', payload: '{"name":"Rex","categoryId":1}' },
      { method: 'GET' as const, url: '/v1/pets/1' }
    ]
    for (const request of requests) {
      const response = await subject.app.inject({ ...request, headers: jsonHeaders(key, { expect: 'something-else' }) })
      assert.equal(response.statusCode, 417)
      assert.deepEqual(checker.check(request, receivedOf(response)).problems, [])
    }
  })
})

describe('regressions found by fuzzing the framing', () => {
  let subject: TestApp
  let port: number
  let key: string

  before(async () => {
    subject = await buildTestApp()
    key = await subject.newKey('enterprise', { perMinute: 1000, perDay: 1000 })
    await subject.app.listen({ host: '127.0.0.1', port: 0 })
    port = (subject.app.server.address() as AddressInfo).port
  })

  after(async () => {
    await subject.close()
  })

  /** The status lines a connection received, in order, once the server has closed it. */
  async function statuses (text: string): Promise<number[]> {
    const connection = await RawConnection.open(port)
    try {
      connection.write(text)
      const received = await connection.waitFor((_received, ended) => ended, 5_000, 'the server to close the connection')
      // A status line follows the previous body directly; no body of this service holds one.
      return [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
    } finally {
      connection.close()
    }
  }

  const listing = (): string => `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n\r\n`

  test('Regression: When a request is pipelined before one the HTTP parser refuses, then it gets its own answer first, and the refused one its Error after', async () => {
    assert.deepEqual(await statuses(`${listing()}NOT HTTP AT ALL\r\n\r\n`), [200, 400])
    assert.deepEqual(await statuses(`${listing()}${listing()}GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`), [200, 200, 431])
    assert.deepEqual(await statuses(`${listing()}CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`), [200, 400])
  })

  test('Regression: When a request line names the method PRI, which the parser takes and no router can route, then it is refused as not HTTP/1.1, with the Error body and the rate-limit headers', async () => {
    const connection = await RawConnection.open(port)
    try {
      connection.write('PRI /v1/\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')
      const received = await connection.waitFor((_received, ended) => ended, 5_000, 'the server to close the connection')
      const response = parseRawResponse(received)

      assert.equal(response.status, 400)
      assert.equal(parseErrorBody(response.body).code, 'invalid_request')
      for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) assert.match(response.headers.get(header) ?? '', /^\d+$/, header)
    } finally {
      connection.close()
    }
  })

  test('Regression: When a request with an unmet Expect is pipelined before one the HTTP parser refuses, then it gets its 417 first', async () => {
    const expecting = `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nExpect: the-impossible\r\n\r\n`
    assert.deepEqual(await statuses(`${expecting}NOT HTTP AT ALL\r\n\r\n`), [417, 400])
  })

  test('Regression: When a request answered before its body is read (405) goes on with a body the parser refuses, then that one answer is all it gets, and the connection closes', async () => {
    const connection = await RawConnection.open(port)
    try {
      connection.write(`PUT /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)
      await connection.waitFor((received) => received.includes('"status":405}'), 5_000, 'the 405')
      connection.write(`zz\r\n{}\r\n0\r\n\r\n${listing()}`)
      const received = await connection.waitFor((_received, ended) => ended, 5_000, 'the server to close the connection')
      assert.deepEqual([...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1])), [405])
    } finally {
      connection.close()
    }
  })

  test('Regression: When a pipelined request that the gate answers before reading its body (401) has a Transfer-Encoding the parser refuses, then that 401 is its one answer, after the first request\'s', async () => {
    const refused = 'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{"name":"Rex","categoryId":1}'
    assert.deepEqual(await statuses(`${listing()}${refused}`), [200, 401])
  })
})
