import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, describe, it } from 'node:test'
import { freePort } from './ports.js'
import { makeTempDir, removeTempDir, sqliteUrl, startServers } from './process.js'

/** Whether anything accepts a connection on 127.0.0.1:port. */
async function accepts (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}

describe('startServers, the test support that starts several servers at once', () => {
  const dir = makeTempDir()
  after(() => { removeTempDir(dir) })

  it('When one of two servers cannot start, then the one that did is ended before the error is thrown', async () => {
    // Arrange: one port for both, so that the second is refused it.
    const port = await freePort()

    // Act
    const started = startServers(2, { DATABASE_URL: sqliteUrl(dir), PORT: String(port) })

    // Assert
    await assert.rejects(started, /EADDRINUSE|exited/)
    assert.equal(await accepts(port), false, 'the server that started still listens')
  })
})
