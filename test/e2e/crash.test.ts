// Durability (docs/OPERATING.md: Durability): a 201 is sent only once the
// animal is committed, so `kill -9` in the middle of a write load loses
// nothing that was acknowledged, however often it happens, and leaves a
// database that SQLite finds intact. A few cycles in `npm test`, twenty
// under `npm run test:soak`.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Database } from '../../src/db/sqlite/driver.js'
import {
  addPet, assertAddedAfter, createUnlimitedKey, loadInFullSwing, range, restartAndList, type PetText
} from '../support/load.js'
import { databaseFile, makeTempDir, removeTempDir, sqliteUrl, type ExitStatus, type ServerProcess } from '../support/process.js'
import { iterations } from '../support/soak.js'

const CYCLES = iterations(3, 20)
/** Clients sending at once: the "100 concurrent POSTs". */
const CLIENTS = 100
/** Each cycle kills only once this many of its requests were acknowledged, so that the load is in full swing. */
const ACKNOWLEDGED_BEFORE_KILL = CLIENTS
/** Then at a random moment within this long, so that the kill lands at a different point of a commit each time. */
const KILL_SPREAD_MS = 250

/** `PRAGMA integrity_check` through a connection of the test's own, beside the running server's. */
function integrityCheck (file: string): unknown {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.pragma('integrity_check', { simple: true })
  } finally {
    db.close()
  }
}

interface Restart {
  /** Acknowledged animals missing or changed after this restart. */
  lost: string[]
  integrity: unknown
}

interface Kill {
  exit: ExitStatus
  acknowledged: number
  inFlight: number
}

describe('petstore serve on SQLite, killed with SIGKILL again and again under write load', { timeout: 60_000 + CYCLES * 20_000 }, () => {
  let dir: string | undefined
  const servers: ServerProcess[] = []

  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    removeTempDir(dir)
  })

  it(`When the process is killed with SIGKILL during ${CLIENTS} concurrent POSTs, ${CYCLES} times over, then after every restart each animal that got a 201 is there as sent, no id is given twice, and integrity_check says ok`, async (t) => {
    // Arrange
    dir = makeTempDir()
    const file = databaseFile(dir)
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createUnlimitedKey(env, 'crash')
    const acknowledged = new Map<string, PetText>()
    const restarts: Restart[] = []
    const kills: Kill[] = []
    const unexpected: string[] = []
    const reusedIds: string[] = []
    let requests = 0

    /** Starts the server on the file and checks what the last kill left. */
    const restart = async (): Promise<ServerProcess> => {
      const { server, lost } = await restartAndList({ ...env, LOG_LEVEL: 'warn' }, token, acknowledged, servers)
      restarts.push({ lost, integrity: integrityCheck(file) })
      return server
    }

    // Act
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const server = await restart()
      const { load, before } = await loadInFullSwing(server, { token, clients: CLIENTS, cycle, count: ACKNOWLEDGED_BEFORE_KILL, spreadMs: KILL_SPREAD_MS }, acknowledged)
      const inFlight = load.inFlight
      server.signal('SIGKILL')
      const exit = await server.waitForExit(5_000)
      await load.ended(15_000)
      kills.push({ exit, acknowledged: acknowledged.size - before, inFlight })
      unexpected.push(...load.unexpected)
      reusedIds.push(...load.reusedIds)
      requests += acknowledged.size - before + load.unanswered + load.unexpected.length
    }
    const last = await restart()
    const added = await addPet(last.origin, token, 'after the crashes')
    const stopped = await last.stop()

    // Assert
    const lost = restarts.flatMap((r, i) => r.lost.map((line) => `restart ${i}: ${line}`))
    const inFlight = kills.map((k) => k.inFlight)
    t.diagnostic(`${CYCLES} kill -9 cycles, ${CLIENTS} clients: ${requests} POSTs, ${acknowledged.size} acknowledged ` +
      `(${range(kills.map((k) => k.acknowledged))} a cycle), ` +
      `${range(inFlight)} in flight at each kill; lost ${lost.length}; ` +
      `integrity_check ${[...new Set(restarts.map((r) => String(r.integrity)))].join(', ')} after ${restarts.length} restarts`)
    assert.deepEqual(unexpected, [])
    for (const kill of kills) assert.equal(kill.exit.signal, 'SIGKILL')
    assert.ok(Math.min(...inFlight) > 0, `a kill found no request in flight: ${inFlight.join(', ')}`)
    assert.deepEqual(lost, [], `${lost.length} acknowledged animals lost or changed`)
    assert.deepEqual(reusedIds, [], 'an id acknowledged before a crash was given again after it')
    assert.deepEqual(restarts.map((r) => r.integrity), restarts.map(() => 'ok'))
    assertAddedAfter(added, acknowledged)
    assert.deepEqual(stopped, { code: 0, signal: null })
    assert.equal(integrityCheck(file), 'ok')
  })
})
