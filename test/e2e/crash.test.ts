// Durability (DECISIONS.md §10): a 201 is sent only once the animal is
// committed, so `kill -9` in the middle of a write load loses nothing that
// was acknowledged, and leaves a database that SQLite finds intact.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { Database } from '../../src/db/sqlite-driver.js'
import { isLosslessNumber, parse } from 'lossless-json'
import {
  createKey, databaseFile, linkTarget, makeTempDir, removeTempDir, sqliteUrl, startServer, withTimeout, type ServerProcess
} from '../support/process.js'
import { INT64_MAX, bearer, newPetJson } from '../support/fixtures.js'

const LOOPS = 8
const LOAD_MS = 1_500
const REQUEST_TIMEOUT_MS = 5_000

/** What a 201 promised: the animal, as sent, under this id. */
interface Acknowledged { name: string, categoryId: string }

interface StoredPet { id: string, name: string, categoryId: string }

/** A JSON text of Pets, with every integer kept as its exact digits. */
function parsePets (text: string): StoredPet[] {
  const value = parse(text)
  assert.ok(Array.isArray(value), `not an array: ${text.slice(0, 200)}`)
  return value.map((item: unknown) => {
    const { id, name, categoryId } = item as Record<string, unknown>
    assert.ok(isLosslessNumber(id) && typeof name === 'string' && isLosslessNumber(categoryId), `not a Pet: ${JSON.stringify(item)}`)
    return { id: id.toString(), name, categoryId: categoryId.toString() }
  })
}

describe('petstore serve, killed with SIGKILL under write load', { timeout: 60_000 }, () => {
  let dir: string | undefined
  let first: ServerProcess | undefined
  let second: ServerProcess | undefined

  after(async () => {
    await first?.dispose()
    await second?.dispose()
    removeTempDir(dir)
  })

  it('When the process is killed mid-load and restarted on the same file, then every pet that got a 201 is there, as sent, and the database is intact', async (t) => {
    // Arrange
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createKey(env, [
      '--plan', 'enterprise', '--name', 'crash', '--per-minute', '1000000', '--per-day', '100000000'
    ])
    const killedServer = first = await startServer({ ...env, LOG_LEVEL: 'warn' })
    const target = `${killedServer.origin}/v1/pets`
    const headers = { ...bearer(token), 'content-type': 'application/json' }
    const acknowledged = new Map<string, Acknowledged>()
    const unexpected: string[] = []
    // Writers keep sending until the dead server fails them; this bounds them even if the kill went astray.
    const giveUpAt = Date.now() + LOAD_MS + REQUEST_TIMEOUT_MS

    async function writer (loop: number): Promise<void> {
      for (let i = 0; Date.now() < giveUpAt; i++) {
        const pet = { name: `crash ${loop}-${i}`, categoryId: INT64_MAX - BigInt(loop * 1_000_000 + i) }
        try {
          const response = await fetch(target, {
            method: 'POST', headers, body: newPetJson(pet), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
          })
          const text = await response.text()
          const id = /"id":(\d+)/.exec(text)?.[1]
          if (response.status === 201 && id !== undefined) {
            acknowledged.set(id, { name: pet.name, categoryId: pet.categoryId.toString() })
          } else {
            unexpected.push(`${response.status} ${text}`)
          }
        } catch {
          // The connection died with the process: this request was never acknowledged.
          return
        }
      }
    }

    // Act: kill -9 while every writer is still sending.
    const writers = Array.from({ length: LOOPS }, (_, loop) => writer(loop))
    await delay(LOAD_MS)
    killedServer.signal('SIGKILL')
    await withTimeout(Promise.all(writers), REQUEST_TIMEOUT_MS * 2, 'the writers to stop')
    const killed = await killedServer.waitForExit(5_000)

    const restarted = second = await startServer(env)
    const listed: StoredPet[] = []
    let next: string | undefined = `${restarted.origin}/v1/pets?limit=100`
    for (let page = 0; next !== undefined; page++) {
      assert.ok(page <= acknowledged.size / 100 + LOOPS + 10, 'the listing did not end')
      const response: Response = await fetch(next, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      assert.equal(response.status, 200)
      listed.push(...parsePets(await response.text()))
      next = linkTarget(response.headers.get('link'), 'next')
    }
    const latest = [...acknowledged.keys()].slice(-LOOPS * 2)
    const fetched = await Promise.all(latest.map(async (id) => {
      const response = await fetch(`${restarted.origin}/v1/pets/${id}`, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      return { id, status: response.status, text: await response.text() }
    }))
    const added = await fetch(`${restarted.origin}/v1/pets`, {
      method: 'POST', headers, body: newPetJson({ name: 'after the crash' }), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    })
    const addedId = /"id":(\d+)/.exec(await added.text())?.[1] ?? '0'
    restarted.signal('SIGTERM')
    const stopped = await restarted.waitForExit(10_000)

    const db = new Database(databaseFile(dir), { fileMustExist: true })
    let integrity: unknown
    let rows: unknown
    try {
      integrity = db.pragma('integrity_check', { simple: true })
      rows = db.prepare('SELECT count(*) AS n FROM pets').get()
    } finally {
      db.close()
    }

    // Assert
    t.diagnostic(`${acknowledged.size} pets acknowledged before the kill, ${listed.length} stored (committed, not all acknowledged)`)
    assert.equal(killed.signal, 'SIGKILL')
    assert.deepEqual(unexpected, [])
    assert.ok(acknowledged.size >= LOOPS, `only ${acknowledged.size} pets were acknowledged before the kill`)

    const stored = new Map(listed.map((pet) => [pet.id, pet]))
    const lost = [...acknowledged.keys()].filter((id) => !stored.has(id))
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets are missing after the restart`)
    for (const [id, sent] of acknowledged) {
      assert.deepEqual(stored.get(id), { id, ...sent })
    }
    const ids = listed.map((pet) => BigInt(pet.id))
    assert.ok(ids.every((id, i) => i === 0 || id > (ids[i - 1] ?? 0n)), 'the listing is not in increasing id order')

    for (const { id, status, text } of fetched) {
      assert.equal(status, 200, `GET /v1/pets/${id}: ${text}`)
      assert.ok(text.includes(`"id":${id},`), text)
    }
    assert.equal(added.status, 201)
    assert.ok(BigInt(addedId) > (ids.at(-1) ?? 0n), `id ${addedId} was given after the crash; the largest before was ${ids.at(-1) ?? 'none'}`)

    assert.deepEqual(stopped, { code: 0, signal: null })
    assert.equal(integrity, 'ok')
    assert.deepEqual(rows, { n: listed.length + 1 })
  })
})
