// SIGTERM under load (docs/OPERATING.md: Shutdown): the service stops
// accepting, finishes what is in flight, and exits 0; every 201 it sent,
// before or after the signal, is on disk when it comes back. The process
// must be gone within 10 s of the signal, far inside its own 30 s limit.
// On SQLite and on PostgreSQL; a few cycles in `npm test`, more under
// `npm run test:soak`.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../../src/http/app.js'
import { loadConfig } from '../../src/config.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { createUnlimitedKey, loadInFullSwing, range, restartAndList, type PetText } from '../support/load.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import {
  RawConnection, isCompleteResponse, makeTempDir, parseRawResponse, removeTempDir, sqliteUrl, type ExitStatus, type ServerProcess
} from '../support/process.js'
import { iterations } from '../support/soak.js'

const CYCLES = iterations(2, 10)
/** Clients sending at once, as in the crash loops. */
const CLIENTS = 100
/** The signal comes once this many requests of the cycle were acknowledged, then at a random moment within the spread. */
const ACKNOWLEDGED_BEFORE_SIGNAL = CLIENTS
const SIGNAL_SPREAD_MS = 250
/** The bound; the service itself gives requests in flight 30 s. */
const EXIT_WITHIN_MS = 10_000

interface Cycle {
  exit: ExitStatus
  exitMs: number
  inFlight: number
  /** 201s the clients received after the signal: requests that were finished rather than dropped. */
  acknowledgedAfterSignal: number
  acknowledged: number
  /** Requests the service logged as received: each must have had its answer. */
  received: number
  receivedUnanswered: string[]
  /** Requests that got no answer, by how their connection failed. */
  unanswered: Map<string, number>
}

/** `ECONNREFUSED 198, UND_ERR_SOCKET 2`: the counts of every cycle added up. */
function describeCounts (counts: ReadonlyArray<ReadonlyMap<string, number>>): string {
  const total = new Map<string, number>()
  for (const map of counts) for (const [key, n] of map) total.set(key, (total.get(key) ?? 0) + n)
  return [...total].map(([key, n]) => `${key} ${n}`).join(', ')
}

/** The X-Request-Id of every `request received` line the service logged. */
function receivedRequestIds (stdout: string): string[] {
  const ids: string[] = []
  for (const line of stdout.split('\n')) {
    if (!line.includes('"msg":"request received"')) continue
    const { requestId } = JSON.parse(line) as { requestId?: unknown }
    if (typeof requestId === 'string') ids.push(requestId)
  }
  return ids
}

const BACKENDS = [
  { name: 'SQLite', databaseUrl: async (dir: string) => sqliteUrl(dir) },
  { name: 'PostgreSQL', databaseUrl: async () => await freshPostgresDatabase() }
] as const

for (const backend of BACKENDS) {
  describe(`petstore serve on ${backend.name}, stopped with SIGTERM under write load`, { timeout: 60_000 + CYCLES * 20_000 }, () => {
    let dir: string | undefined
    const servers: ServerProcess[] = []

    after(async () => {
      await Promise.all(servers.map(async (server) => await server.dispose()))
      removeTempDir(dir)
    })

    it(`When SIGTERM arrives during ${CLIENTS} concurrent POSTs, ${CYCLES} times over, then every animal that got a 201 is stored as sent and the process exits 0 within ${EXIT_WITHIN_MS / 1000} s`, async (t) => {
      // Arrange
      dir = makeTempDir()
      // At debug, the service logs each request as it arrives, under the client's X-Request-Id.
      const env = { DATABASE_URL: await backend.databaseUrl(dir), LOG_LEVEL: 'debug' }
      const { token } = await createUnlimitedKey(env, 'shutdown')
      const acknowledged = new Map<string, PetText>()
      const cycles: Cycle[] = []
      const lost: string[] = []
      const unexpected: string[] = []
      const reusedIds: string[] = []
      let unavailable = 0

      const restart = async (): Promise<ServerProcess> => {
        const restarted = await restartAndList(env, token, acknowledged, servers)
        lost.push(...restarted.lost)
        return restarted.server
      }

      // Act
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const server = await restart()
        const { load, before } = await loadInFullSwing(server, { token, clients: CLIENTS, cycle, count: ACKNOWLEDGED_BEFORE_SIGNAL, spreadMs: SIGNAL_SPREAD_MS }, acknowledged)
        const inFlight = load.inFlight
        const atSignal = acknowledged.size
        const signalled = Date.now()
        server.signal('SIGTERM')
        const exit = await server.waitForExit(EXIT_WITHIN_MS * 2)
        const exitMs = Date.now() - signalled
        // Once the port is closed, each client's next request is refused and it stops.
        await load.ended(15_000)
        const received = receivedRequestIds(server.stdout).filter((id) => id.startsWith(load.requestIdPrefix))
        cycles.push({
          exit,
          exitMs,
          inFlight,
          acknowledgedAfterSignal: acknowledged.size - atSignal,
          acknowledged: acknowledged.size - before,
          received: received.length,
          receivedUnanswered: received.filter((id) => !load.answeredRequestIds.has(id)),
          unanswered: load.networkErrors
        })
        unexpected.push(...load.unexpected)
        reusedIds.push(...load.reusedIds)
        unavailable += load.unavailable
      }
      await (await restart()).stop()

      // Assert
      t.diagnostic(`${CYCLES} SIGTERMs during ${CLIENTS} concurrent POSTs on ${backend.name}: ${acknowledged.size} acknowledged, ` +
        `${range(cycles.map((c) => c.inFlight))} in flight at the signal, ${range(cycles.map((c) => c.acknowledgedAfterSignal))} answered 201 after it, ` +
        `${range(cycles.map((c) => c.received))} received by the service, ${cycles.reduce((n, c) => n + c.receivedUnanswered.length, 0)} of them unanswered; ` +
        `unanswered: ${describeCounts(cycles.map((c) => c.unanswered))}; lost ${lost.length}; exit code ${[...new Set(cycles.map((c) => c.exit.code))].join(', ')} ` +
        `${range(cycles.map((c) => c.exitMs))} ms after the signal`)
      for (const { exit, exitMs } of cycles) {
        assert.deepEqual(exit, { code: 0, signal: null })
        assert.ok(exitMs < EXIT_WITHIN_MS, `the process exited ${exitMs} ms after SIGTERM`)
      }
      assert.deepEqual(unexpected, [])
      assert.equal(unavailable, 0, 'requests got 503 while the service was shutting down')
      assert.ok(cycles.every((c) => c.inFlight > 0), 'a signal found no request in flight')
      assert.deepEqual(cycles.flatMap((c) => c.receivedUnanswered), [], 'requests the service had received were never answered')
      assert.deepEqual(lost, [], `${lost.length} acknowledged animals lost or changed`)
      assert.deepEqual(reusedIds, [])
    })
  })
}

describe('closing while a request is on its way over an idle keep-alive connection', () => {
  it('When the server starts closing just as a request arrives on an idle keep-alive connection, then that request is answered with Connection: close, not cut off', async () => {
    // Arrange: a keep-alive connection that has had its answer and is idle.
    const storage = openSqlite('sqlite::memory:')
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }), storage, limiter: new MemoryStore() })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const connection = await RawConnection.open((app.server.address() as AddressInfo).port)
    const request = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'
    connection.write(request)
    const first = (await connection.waitFor((text) => isCompleteResponse(text), 5_000, 'the first answer')).length

    // Act: the next request is on the wire, not yet read, when the close begins.
    connection.write(request)
    const closed = app.close()
    const received = await connection.waitFor((_text, ended) => ended, 5_000, 'the server to end the connection').catch((error: unknown) => error)
    await closed
    connection.close()

    // Assert
    assert.equal(typeof received, 'string', `the connection failed: ${String(received)}`)
    const second = parseRawResponse(String(received).slice(first))
    assert.equal(second.status, 200)
    assert.equal(second.headers.get('connection'), 'close')
  })
})
