// The framing rule decides an Expect the way Node's own server does, so
// that a request Node sent `100 Continue` for is never answered 417, and an
// injected request is answered as one sent over a socket.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { framingRefusal } from '../../src/plugins/framing.js'
import { rawRequest } from '../support/process.js'

const EXPECTATIONS = ['100-continue', '100-Continue', 'foo, 100-continue', '100-continue,foo', '100-continue;a=b', '"100-continue"', 'x100-continue', '100-continuex', '', ' ', 'bogus']

describe('the framing rule for Expect', () => {
  let server: Server
  let port: number

  before(async () => {
    // Node's defaults: it meets 100-continue by itself and answers 417 to any other expectation.
    server = createServer((_request, response) => { response.end() })
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    port = (server.address() as AddressInfo).port
  })

  after(async () => {
    await new Promise((resolve) => { server.close(resolve) })
  })

  it('When Node\'s own server and the framing rule judge the same expectations, then they agree on each', async () => {
    for (const expect of EXPECTATIONS) {
      // Act
      const node = await rawRequest(port, `GET / HTTP/1.1\r\nHost: localhost\r\nExpect: ${expect}\r\nConnection: close\r\n\r\n`)
      const ours = framingRefusal({ httpVersionMajor: 1, httpVersionMinor: 1, headers: { host: 'localhost', expect } } as unknown as IncomingMessage)

      // Assert
      assert.equal(ours?.status === 417, node.status === 417, `Expect: ${JSON.stringify(expect)}: Node answered ${node.status}, the rule ${ours?.status ?? 'nothing'}`)
    }
  })
})
