// What the gate asks the database, and when it need not: a token no key
// has, from an address over its limit, costs no query (docs/SECURITY.md).
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import type { Storage } from '../../src/db/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { issueKey } from '../../src/keys/manage.js'
import { generateToken } from '../../src/keys/tokens.js'
import { buildTestApp, type TestApp } from '../support/app.js'
import { CLOCK_START, bearer } from '../support/fixtures.js'

/** An in-memory SQLite storage whose key lookups and index reads are counted. */
function countingStorage (): { storage: Storage, lookups: () => number, indexReads: () => number } {
  const storage = openSqlite('sqlite::memory:')
  let lookups = 0
  let indexReads = 0
  const find = storage.findApiKeyByTokenHash.bind(storage)
  const list = storage.listTokenHashes.bind(storage)
  storage.findApiKeyByTokenHash = async (hash) => { lookups++; return await find(hash) }
  storage.listTokenHashes = async (after, limit) => { indexReads++; return await list(after, limit) }
  return { storage, lookups: () => lookups, indexReads: () => indexReads }
}

/** Refreshes of the index begun for tokens it lacks start at least this far apart (keys/lookup/refresher.ts). */
const CATCH_UP_MS = 20
/** The index's own refresh, every 500 ms. */
const REFRESH_MS = 500

describe('key lookups at the gate', () => {
  let t: TestApp
  let lookups: () => number
  let indexReads: () => number
  beforeEach(async () => {
    const counting = countingStorage()
    lookups = counting.lookups
    indexReads = counting.indexReads
    t = await buildTestApp({}, { storage: counting.storage })
  })
  afterEach(async () => { await t.close() })

  const get = async (token: string, remoteAddress = '203.0.113.7') =>
    await t.app.inject({ url: '/v1/pets', headers: bearer(token), remoteAddress })

  it('When one address sends 300 requests, each with a new well-formed token, then 60 get 401, 240 get 429, only the 60 and the first refused are looked up, and the index is read at most once per 20 ms (regression: database lookups past the rate limit)', async (c) => {
    // Arrange
    const readsBefore = indexReads()
    const started = performance.now()

    // Act
    const statuses: number[] = []
    for (let i = 0; i < 300; i++) statuses.push((await get(generateToken('production'))).statusCode)

    // Assert
    const ms = performance.now() - started
    const reads = indexReads() - readsBefore
    c.diagnostic(`300 requests in ${Math.round(ms)} ms: ${lookups()} key lookups, ${reads} index reads`)
    assert.equal(statuses.filter((s) => s === 401).length, 60)
    assert.equal(statuses.filter((s) => s === 429).length, 240)
    assert.equal(lookups(), 61, 'a token from an address known to be over its limit was looked up')
    assert.ok(reads <= Math.ceil(ms / CATCH_UP_MS) + Math.ceil(ms / REFRESH_MS) + 2, `${reads} index reads in ${Math.round(ms)} ms`)
  })

  it('When an address over its limit sends 200 unknown tokens at once, then none is looked up and they share a few reads of the index', async (c) => {
    // Arrange
    for (let i = 0; i < 61; i++) await get(generateToken('production'))
    const lookupsBefore = lookups()
    const readsBefore = indexReads()
    const started = performance.now()

    // Act
    const responses = await Promise.all(Array.from({ length: 200 }, async () => await get(generateToken('production'))))

    // Assert
    const ms = performance.now() - started
    const reads = indexReads() - readsBefore
    c.diagnostic(`200 concurrent guesses in ${Math.round(ms)} ms: ${reads} index reads`)
    assert.deepEqual([...new Set(responses.map((r) => r.statusCode))], [429])
    assert.equal(lookups(), lookupsBefore, 'a guess was looked up')
    assert.ok(reads <= Math.ceil(ms / CATCH_UP_MS) + Math.ceil(ms / REFRESH_MS) + 2, `${reads} index reads in ${Math.round(ms)} ms`)
    assert.ok(reads < 200, 'each guess read the index')
  })

  it('When an address is over its limit and a key is made after the index was read, then its first request from that address is served (regression: 429 for a new key)', async () => {
    // Arrange: the index was read when the app started; the key is made straight in the database, as another instance or the command line would.
    for (let i = 0; i < 61; i++) await get(generateToken('production'))
    assert.equal((await get(generateToken('production'))).statusCode, 429, 'the address was not over its limit')
    const key = await issueKey(t.storage, { plan: 'free', name: 'new', perMinute: undefined, perDay: undefined, environment: 'production', now: t.clock.now() })

    // Act
    const response = await get(key.token)

    // Assert
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers['x-ratelimit-remaining'], '59', 'the key was not counted as itself')
  })

  it('When a key was made after the index was read (on another instance), then its first request from an address under its limit is served', async () => {
    // Arrange: made straight in the database, as another instance or the command line would.
    const key = await issueKey(t.storage, { plan: 'free', name: 'new', perMinute: undefined, perDay: undefined, environment: 'production', now: t.clock.now() })

    // Act
    const response = await get(key.token)

    // Assert
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers['x-ratelimit-remaining'], '59')
  })
})

// Its own app, on a storage that holds the key before the app starts: the app of the suite above starts on an empty one.
describe('key lookups at the gate, for a key the instance knew when it started', () => {
  it('When an address is over its limit, then a valid key sent from it is still looked up and served (clients behind one NAT)', async () => {
    // Arrange: a key the instance knew when it started.
    const counting = countingStorage()
    const key = await issueKey(counting.storage, { plan: 'free', name: 'behind a NAT', perMinute: undefined, perDay: undefined, environment: 'production', now: CLOCK_START })
    const own = await buildTestApp({}, { storage: counting.storage })
    const from = async (token: string) => await own.app.inject({ url: '/v1/pets', headers: bearer(token), remoteAddress: '203.0.113.7' })
    try {
      for (let i = 0; i < 60; i++) await from(generateToken('production'))
      assert.equal((await from(generateToken('production'))).statusCode, 429, 'the address was not over its limit')

      // Act
      const keyed = await from(key.token)

      // Assert
      assert.equal(keyed.statusCode, 200)
      assert.equal(keyed.headers['x-ratelimit-remaining'], '59', 'the key was not counted as itself')
    } finally {
      await own.close()
    }
  })
})
