// Durability on PostgreSQL (docs/OPERATING.md: Durability, PostgreSQL):
// under a write load, the database is stopped at once (`pg_ctl stop -m
// immediate`: no checkpoint, crash recovery at the next start) and started
// again, then the service is killed with `kill -9`; every animal that got a
// 201 must be there when the service comes back, and PostgreSQL's own
// checker (amcheck) must find its tables and indexes intact. Requests made
// while the database is away get 503, never anything else. The test owns
// its PostgreSQL cluster, since it stops it. A few cycles in `npm test`,
// twenty under `npm run test:soak`.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import pg from 'pg'
import {
  addPet, assertAddedAfter, createUnlimitedKey, loadInFullSwing, range, restartAndList, type PetText
} from '../support/load.js'
import { PostgresCluster } from '../support/postgres-cluster.js'
import { makeTempDir, removeTempDir, type ExitStatus, type ServerProcess } from '../support/process.js'
import { iterations } from '../support/soak.js'

const CYCLES = iterations(2, 20)
/** Clients sending at once: the "100 concurrent POSTs". */
const CLIENTS = 100
/** Acknowledged writes before each fault, so that it lands in a load in full swing. */
const ACKNOWLEDGED_BEFORE_FAULT = CLIENTS
/** Each fault comes at a random moment within this long after that. */
const FAULT_SPREAD_MS = 250
/** The service's tables; amcheck checks each and its indexes. */
const TABLES = ['pets', 'api_keys', 'idempotency_keys', 'secrets', 'schema_migrations']

/**
 * 'ok', or what amcheck found: verify_heapam reads every tuple of a table,
 * bt_index_check (heapallindexed) checks each B-tree index and that it
 * indexes every tuple. https://www.postgresql.org/docs/current/amcheck.html
 */
async function amcheck (databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS amcheck')
    const problems: string[] = []
    for (const table of TABLES) {
      const heap = await client.query<{ msg: string }>('SELECT msg FROM verify_heapam($1::regclass)', [table])
      problems.push(...heap.rows.map((row) => `${table}: ${row.msg}`))
      const indexes = await client.query<{ name: string }>(
        "SELECT indexrelid::regclass::text AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = $1::regclass AND a.amname = 'btree'",
        [table])
      for (const { name } of indexes.rows) {
        await client.query('SELECT bt_index_check($1::regclass, true)', [name]).catch((error: unknown) => {
          problems.push(`${name}: ${error instanceof Error ? error.message : String(error)}`)
        })
      }
    }
    return problems.length === 0 ? 'ok' : problems.join('; ')
  } finally {
    await client.end()
  }
}

interface Restart { lost: string[], amcheck: string }

interface Cycle {
  exit: ExitStatus
  acknowledged: number
  /** 503s while PostgreSQL was away. */
  unavailable: number
  /** From the immediate stop until PostgreSQL answered again, and until the service wrote again. */
  databaseDownMs: number
  writesBackMs: number
  inFlightAtKill: number
}

describe('petstore serve on PostgreSQL, its database stopped at once and itself killed with SIGKILL under write load', { timeout: 90_000 + CYCLES * 30_000 }, () => {
  const dir = makeTempDir()
  let cluster: PostgresCluster | undefined
  const servers: ServerProcess[] = []

  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await cluster?.stop()
    removeTempDir(dir)
  })

  it(`When PostgreSQL is stopped with -m immediate and restarted, then the service killed with SIGKILL, during ${CLIENTS} concurrent POSTs, ${CYCLES} times over, then every animal that got a 201 is there as sent after each restart, every other answer is 503, and amcheck finds no corruption`, async (t) => {
    // Arrange
    const db = cluster = await PostgresCluster.start({ dir })
    const env = { DATABASE_URL: db.url }
    const { token } = await createUnlimitedKey(env, 'crash')
    const acknowledged = new Map<string, PetText>()
    const restarts: Restart[] = []
    const cycles: Cycle[] = []
    const unexpected: string[] = []
    const reusedIds: string[] = []

    const restart = async (): Promise<ServerProcess> => {
      const { server, lost } = await restartAndList({ ...env, LOG_LEVEL: 'warn' }, token, acknowledged, servers)
      restarts.push({ lost, amcheck: await amcheck(db.url) })
      return server
    }

    // Act
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const server = await restart()
      const { load, before } = await loadInFullSwing(server, { token, clients: CLIENTS, cycle, count: ACKNOWLEDGED_BEFORE_FAULT, spreadMs: FAULT_SPREAD_MS }, acknowledged)
      db.signal('SIGQUIT')
      const stoppedAt = Date.now()
      await db.exited()
      await load.until((l) => l.unavailable >= CLIENTS, 30_000, 'the clients to be told the database is away')
      await db.resume()
      const databaseDownMs = Date.now() - stoppedAt
      const resumed = acknowledged.size
      await load.until((l) => l.acknowledged.size > resumed, 30_000, 'a write to succeed once PostgreSQL is back')
      const writesBackMs = Date.now() - stoppedAt - databaseDownMs
      await load.until((l) => l.acknowledged.size >= resumed + ACKNOWLEDGED_BEFORE_FAULT, 30_000, `${ACKNOWLEDGED_BEFORE_FAULT} acknowledged writes after PostgreSQL's restart`)
      await delay(Math.random() * FAULT_SPREAD_MS)
      const inFlightAtKill = load.inFlight
      server.signal('SIGKILL')
      const exit = await server.waitForExit(5_000)
      await load.ended(15_000)
      cycles.push({ exit, acknowledged: acknowledged.size - before, unavailable: load.unavailable, databaseDownMs, writesBackMs, inFlightAtKill })
      unexpected.push(...load.unexpected)
      reusedIds.push(...load.reusedIds)
    }
    const last = await restart()
    const added = await addPet(last.origin, token, 'after the crashes')
    const stopped = await last.stop()

    // Assert
    const lost = restarts.flatMap((r, i) => r.lost.map((line) => `restart ${i}: ${line}`))
    t.diagnostic(`${CYCLES} cycles of an immediate PostgreSQL stop then kill -9, ${CLIENTS} clients: ${acknowledged.size} acknowledged ` +
      `(${range(cycles.map((c) => c.acknowledged))} a cycle), ${cycles.reduce((n, c) => n + c.unavailable, 0)} answered 503 while PostgreSQL was away, ` +
      `PostgreSQL back after ${range(cycles.map((c) => c.databaseDownMs))} ms and writes ${range(cycles.map((c) => c.writesBackMs))} ms after that, ` +
      `${range(cycles.map((c) => c.inFlightAtKill))} in flight at each kill; lost ${lost.length}; ` +
      `amcheck ${[...new Set(restarts.map((r) => r.amcheck))].join(', ')} after ${restarts.length} restarts`)
    assert.deepEqual(unexpected, [])
    for (const { exit } of cycles) assert.equal(exit.signal, 'SIGKILL')
    assert.ok(cycles.every((c) => c.inFlightAtKill > 0), 'a kill found no request in flight')
    assert.deepEqual(lost, [], `${lost.length} acknowledged animals lost or changed`)
    assert.deepEqual(reusedIds, [], 'an id acknowledged before a crash was given again after it')
    assert.deepEqual(restarts.map((r) => r.amcheck), restarts.map(() => 'ok'))
    assertAddedAfter(added, acknowledged)
    assert.deepEqual(stopped, { code: 0, signal: null })
  })
})
