// WORKERS=2 (docs/WORKERS.md): the log lines of both workers reach one
// stdout, a pipe here as under a container runtime. Lines written to one
// pipe by several threads would stay whole only if every write(2) held whole
// lines and at most PIPE_BUF bytes; the main thread writes them all instead
// (docs/INTERNALS.md, section "Log"). Long request lines from both workers at
// once would show any line cut or mixed.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { sharesPorts } from '../../src/config.js'
import { ServerProcess, makeTempDir, removeTempDir, sqliteUrl, startServer } from '../support/process.js'

const SHARES_PORTS = sharesPorts(process.versions.node)
const REQUESTS = 4000
const AT_ONCE = 32
/** Query parts shorter than the 32 characters past which the log scans a part for tokens, some 3 KB in all: a line near PIPE_BUF. */
const PADDING = Array.from({ length: 110 }, (_, i) => `p${i}=abcdefghijklmnopqrstu`).join('&')

/** One GET on a connection of its own, so that the kernel spreads them over both workers; resolves with its status. */
async function get (port: number, path: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000 }, (response) => {
      response.resume().on('end', () => { resolve(response.statusCode ?? 0) })
    })
    outgoing.on('error', reject).on('timeout', () => { outgoing.destroy(new Error(`GET ${path}: no answer`)) })
    outgoing.end()
  })
}

describe('two workers writing one piped stdout', { skip: !SHARES_PORTS && 'this Node.js cannot share a port between threads', timeout: 180_000 }, () => {
  // Made in the hook, not here: a skipped suite runs no hook, and would leave the folder behind.
  let dir: string
  let server: ServerProcess
  before(async () => {
    dir = makeTempDir()
    server = await startServer({ DATABASE_URL: sqliteUrl(dir), WORKERS: '2' }, 30_000)
  })
  after(async () => {
    await server.dispose()
    removeTempDir(dir)
  })

  it('When both workers log thousands of long request lines at once, then every stdout line is whole JSON and each request has its line', async () => {
    // Arrange
    let sent = 0
    const statuses: number[] = []
    const client = async (): Promise<void> => {
      while (sent < REQUESTS) {
        const n = sent++
        statuses.push(await get(server.port, `/healthz?n=${n}&${PADDING}`))
      }
    }

    // Act
    await Promise.all(Array.from({ length: AT_ONCE }, client))
    const exit = await server.stop(40_000)

    // Assert
    assert.equal(exit?.code, 0, server.stderr)
    assert.deepEqual(new Set(statuses), new Set([200]))
    const lines = server.stdout.split('\n')
    assert.equal(lines.pop(), '', 'stdout ends with a whole line')
    const unparsed = lines.filter((line) => {
      try {
        JSON.parse(line)
        return false
      } catch {
        return true
      }
    })
    assert.deepEqual(unparsed.map((line) => line.slice(0, 200)), [], `${unparsed.length} of ${lines.length} lines are not JSON`)
    const requestLines = lines.map((line) => JSON.parse(line) as { msg?: string, url?: string, worker?: number })
      .filter(({ msg, url }) => msg === 'request completed' && url?.startsWith('/healthz?n=') === true)
    assert.equal(requestLines.length, REQUESTS)
    assert.equal(new Set(requestLines.map(({ url }) => url)).size, REQUESTS)
    assert.equal(new Set(requestLines.map(({ worker }) => worker)).size, 2, 'both workers served')
    assert.ok(Math.max(...lines.map((line) => Buffer.byteLength(line))) > 3000, 'the request lines are long')
  })
})
