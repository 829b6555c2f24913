import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { ApiKeyMatch, ApiKeyRecord, IssuedToken, NewApiKeyRecord, Storage } from '../../src/db/storage.js'
import { openSqlite, type SqliteStorage } from '../../src/db/sqlite/storage.js'
import type { Environment } from '../../src/domain.js'
import { createKeyLookup, type KeyLookup } from '../../src/keys/lookup.js'
import { BloomFilter } from '../../src/keys/lookup/bloom.js'
import { generateToken, hashToken } from '../../src/keys/tokens.js'

type LookupStorage = Pick<Storage, 'findApiKeyByTokenHash' | 'listTokenHashes' | 'countTokens'>

/** A monotonic clock the test moves; it starts above 0, which lru-cache would take for "no TTL". */
function testClock (): { now: () => number, advance: (ms: number) => void } {
  let now = 1000
  return { now: () => now, advance: (ms) => { now += ms } }
}

/** Counts each call the lookup makes to the storage. */
function counted (storage: LookupStorage): { storage: LookupStorage, calls: { find: number, list: number, count: number } } {
  const calls = { find: 0, list: 0, count: 0 }
  return {
    calls,
    storage: {
      findApiKeyByTokenHash: async (hash) => { calls.find++; return await storage.findApiKeyByTokenHash(hash) },
      listTokenHashes: async (after, limit) => { calls.list++; return await storage.listTokenHashes(after, limit) },
      countTokens: async () => { calls.count++; return await storage.countTokens() }
    }
  }
}

function buildKey (overrides: Partial<NewApiKeyRecord> = {}): NewApiKeyRecord {
  return {
    name: 'test',
    plan: 'free',
    perMinute: null,
    perDay: null,
    concurrency: null,
    environment: 'production',
    scopes: ['pets:read', 'pets:write'],
    tokenHash: hashToken(generateToken('production')),
    tokenHint: 'pet_live_…0000',
    createdAt: 0,
    expiresAt: null,
    ...overrides
  }
}

function unknownHash (): string {
  return hashToken(generateToken('production'))
}

/** As unknownHash, faster: a SHA-256 digest is as uniform as random bytes. */
function randomHash (): string {
  return randomBytes(32).toString('hex')
}

describe('the index of token hashes', () => {
  let db: SqliteStorage
  let lookup: KeyLookup
  let calls: ReturnType<typeof counted>['calls']
  beforeEach(() => {
    db = openSqlite('sqlite::memory:')
    const wrapped = counted(db)
    calls = wrapped.calls
    lookup = createKeyLookup({ storage: wrapped.storage, environment: 'production', clock: testClock().now })
  })
  afterEach(async () => {
    lookup.close()
    await db.close()
  })

  it('When every key has been loaded, then mayExist says yes for each of them, revoked and staging ones too', async () => {
    // Arrange
    const hashes = []
    for (let i = 0; i < 500; i++) {
      const key = buildKey(i % 5 === 0 ? { environment: 'staging' } : {})
      const created = await db.createApiKey(key)
      if (i % 7 === 0) await db.changeApiKey(created.id, () => ({ revokedAt: 1 }))
      hashes.push(key.tokenHash)
    }

    // Act
    await lookup.refresh()

    // Assert
    assert.deepEqual(hashes.filter((hash) => !lookup.mayExist(hash)), [])
  })

  it('When a key is created after the first load, then mayExist says yes for it after one refresh', async () => {
    // Arrange
    await db.createApiKey(buildKey())
    await lookup.refresh()
    const later = buildKey()
    await db.createApiKey(later)
    const before = lookup.mayExist(later.tokenHash)

    // Act
    await lookup.refresh()

    // Assert
    assert.equal(before, false, 'the key was in the filter before the refresh read it')
    assert.equal(lookup.mayExist(later.tokenHash), true)
  })

  it('When unknown hashes are asked about, then mayExist says no without a query', async () => {
    // Arrange
    for (let i = 0; i < 100; i++) await db.createApiKey(buildKey())
    await lookup.refresh()
    const queries = { ...calls }

    // Act
    const answers = Array.from({ length: 1000 }, () => lookup.mayExist(unknownHash()))

    // Assert: at 100 keys in a filter sized for 10,000, a false positive among 1,000 is all but impossible.
    assert.deepEqual(answers.filter((answer) => answer), [])
    assert.deepEqual(calls, queries, 'the storage was asked')
  })

  it('When a key is created after the last refresh, then mayExistNow reads the index again and says yes for it', async () => {
    // Arrange
    await lookup.refresh()
    const later = buildKey()
    await db.createApiKey(later)

    // Act
    const answer = await lookup.mayExistNow(later.tokenHash)

    // Assert
    assert.equal(answer, true)
  })

  it('When 100 unknown hashes are asked about at once with mayExistNow, then all are refused after one shared read of the index, and none is looked up', async () => {
    // Arrange
    await lookup.refresh()
    const before = { ...calls }

    // Act
    const answers = await Promise.all(Array.from({ length: 100 }, async () => await lookup.mayExistNow(unknownHash())))

    // Assert
    assert.deepEqual(answers.filter((answer) => answer), [])
    assert.equal(calls.find, before.find, 'a hash was looked up')
    assert.equal(calls.list - before.list, 1, 'the waiting hashes did not share one read')
  })

  it('When the index lacks a hash and its refresh fails, then mayExistNow gives the filter\'s answer', async () => {
    // Arrange: a storage whose refreshes fail after the first load.
    let failing = false
    const errors: unknown[] = []
    const flaky = createKeyLookup({
      storage: { findApiKeyByTokenHash: db.findApiKeyByTokenHash.bind(db), countTokens: db.countTokens.bind(db), listTokenHashes: async (after, limit) => { if (failing) throw new Error('down'); return await db.listTokenHashes(after, limit) } },
      environment: 'production',
      clock: testClock().now,
      onRefreshError: (error) => { errors.push(error) }
    })
    await flaky.refresh()
    failing = true

    // Act
    const answer = await flaky.mayExistNow(unknownHash())

    // Assert
    assert.equal(answer, false)
    assert.equal(errors.length, 1)
    flaky.close()
  })

  it('When the first load has not happened yet, then every token may exist, so that the gate looks it up', () => {
    assert.equal(lookup.mayExist(unknownHash()), true)
  })

  it('When a lookup finds a key the filter lacks, then mayExist says yes for it before any refresh', async () => {
    // Arrange
    await lookup.refresh()
    const key = buildKey()
    await db.createApiKey(key)

    // Act
    const found = await lookup.find(key.tokenHash)

    // Assert
    assert.equal(found?.key.environment, 'production')
    assert.equal(lookup.mayExist(key.tokenHash), true)
  })

  it('When started, then the first load is done, and a key created afterwards is in the filter after the next timer', async (t) => {
    // Arrange
    t.mock.timers.enable({ apis: ['setTimeout'] })
    await lookup.start()
    const key = buildKey()
    await db.createApiKey(key)
    const before = lookup.mayExist(key.tokenHash)

    // Act
    t.mock.timers.tick(500)
    await settled()

    // Assert
    assert.equal(before, false)
    assert.equal(lookup.mayExist(key.tokenHash), true)
  })
})

/** Keys whose commits the test orders: a key is listed only once committed, whatever its id. */
class CommitsInAnyOrder implements LookupStorage {
  readonly committed: IssuedToken[] = []
  listCalls: number[] = []

  commit (id: number): string {
    const tokenHash = randomHash()
    this.committed.push({ id, tokenHash })
    if (id < (this.committed.at(-2)?.id ?? 0)) this.committed.sort((a, b) => a.id - b.id)
    return tokenHash
  }

  async findApiKeyByTokenHash (): Promise<ApiKeyMatch | undefined> {
    return undefined
  }

  async listTokenHashes (afterId: number, limit: number): Promise<IssuedToken[]> {
    this.listCalls.push(afterId)
    return this.committed.filter((key) => key.id > afterId).slice(0, limit)
  }

  async countTokens (): Promise<number> {
    await this.#held
    return this.committed.length
  }

  #held: Promise<void> | undefined
  /** Makes the next counts wait until the function returned is called. */
  hold (): () => void {
    let release = (): void => {}
    this.#held = new Promise((resolve) => { release = resolve })
    return () => {
      this.#held = undefined
      release()
    }
  }
}

describe('the index of token hashes, when keys commit out of id order (PostgreSQL)', () => {
  it('When a key commits after a key with a higher id was read, then the next refresh still brings it', async () => {
    // Arrange: id 2 has been handed out but not committed when id 3 is read.
    const storage = new CommitsInAnyOrder()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: testClock().now })
    storage.commit(1)
    storage.commit(3)
    await lookup.refresh()
    const late = storage.commit(2)

    // Act
    await lookup.refresh()

    // Assert
    assert.equal(lookup.mayExist(late), true)
    assert.deepEqual(storage.listCalls, [0, 1])
  })

  it('When a skipped id is still missing after 30 s, then refreshes stop reading from it', async () => {
    // Arrange: id 2 rolled back and will never come.
    const storage = new CommitsInAnyOrder()
    const clock = testClock()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: clock.now })
    storage.commit(1)
    storage.commit(3)
    await lookup.refresh()
    await lookup.refresh()

    // Act
    clock.advance(30_001)
    await lookup.refresh()
    await lookup.refresh()

    // Assert: from the gap while it may still commit, then from the highest id.
    assert.deepEqual(storage.listCalls, [0, 1, 1, 3])
  })
})

describe('the index of token hashes, when keys outgrow the filter', () => {
  /** A database with more keys than the smallest filter is sized for (10,000), read once when it had none. */
  async function outgrown (): Promise<{ storage: CommitsInAnyOrder, lookup: KeyLookup, hashes: string[] }> {
    const storage = new CommitsInAnyOrder()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: testClock().now })
    await lookup.refresh()
    const hashes = Array.from({ length: 10_001 }, (_, i) => storage.commit(i + 1))
    await lookup.refresh()
    storage.listCalls = []
    return { storage, lookup, hashes }
  }

  it('When more keys than the filter was sized for have been added, then a larger one is built from every key', async () => {
    // Arrange
    const { storage, lookup, hashes } = await outgrown()

    // Act
    await lookup.refresh()
    await settled()
    await lookup.refresh()

    // Assert: what is new, and every key (in two pages) for the new filter; then what is new since the full read.
    assert.deepEqual(storage.listCalls, [10_001, 0, 10_000, 10_001])
    assert.deepEqual(hashes.filter((hash) => !lookup.mayExist(hash)), [])
  })

  it('When a key is made while the larger filter is being built, then the next refresh brings it all the same', async () => {
    // Arrange: the full read waits at its first query.
    const { storage, lookup } = await outgrown()
    const release = storage.hold()
    await lookup.refresh()
    const late = storage.commit(10_002)

    // Act
    await lookup.refresh()

    // Assert
    const whileBuilding = lookup.mayExist(late)
    release()
    await settled()
    assert.equal(whileBuilding, true)
    assert.equal(lookup.mayExist(late), true)
  })
})

/** A storage whose lookups answer when the test says, with the key as it is then. */
class HeldLookups implements LookupStorage {
  readonly #keys = new Map<string, ApiKeyRecord>()
  readonly #waiting: Array<() => void> = []
  finds = 0

  add (tokenHash: string, environment: Environment = 'production'): ApiKeyRecord {
    const key: ApiKeyRecord = { id: this.#keys.size + 1, name: 'k', plan: 'free', perMinute: null, perDay: null, concurrency: null, environment, scopes: ['pets:read'], tokenHint: 'pet_live_…0000', createdAt: 0, expiresAt: null, lastUsedAt: null, revokedAt: null, previousTokenExpiresAt: null }
    this.#keys.set(tokenHash, key)
    return key
  }

  async findApiKeyByTokenHash (tokenHash: string): Promise<ApiKeyMatch | undefined> {
    this.finds++
    const answer = this.#keys.get(tokenHash)
    const copy = answer === undefined ? undefined : { key: { ...answer }, previous: false }
    await new Promise<void>((resolve) => this.#waiting.push(resolve))
    return copy
  }

  /** Lets every lookup in flight answer. */
  answer (): void {
    for (const resolve of this.#waiting.splice(0)) resolve()
  }

  async listTokenHashes (): Promise<IssuedToken[]> {
    return []
  }

  async countTokens (): Promise<number> {
    return 0
  }
}

describe('the cache of key lookups', () => {
  async function find (storage: HeldLookups, lookup: KeyLookup, hash: string): Promise<ApiKeyRecord | undefined> {
    const found = lookup.find(hash)
    await settled()
    storage.answer()
    return (await found)?.key
  }

  it('When a key is revoked and the wall clock goes back an hour, then it is refused once 500 ms have passed on the monotonic clock', async (t) => {
    // Arrange: the lookup's own clock, performance.now, moved by the test.
    let monotonic = 1000
    t.mock.method(performance, 'now', () => monotonic)
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2027-03-10T12:00:00Z') })
    const storage = new HeldLookups()
    const lookup = createKeyLookup({ storage, environment: 'production' })
    const hash = unknownHash()
    const key = storage.add(hash)
    assert.equal((await find(storage, lookup, hash))?.id, key.id)

    // Act
    key.revokedAt = 1
    t.mock.timers.setTime(Date.parse('2027-03-10T11:00:00Z'))
    monotonic += 499
    const cached = await find(storage, lookup, hash)
    monotonic += 2
    const after = await find(storage, lookup, hash)

    // Assert
    assert.equal(cached?.id, key.id, 'the lookup was not cached at all')
    assert.equal(after, undefined)
    assert.equal(storage.finds, 2)
  })

  /** A key's first lookup, answered `ms` after it was sent, on a clock the test moves. */
  async function slowFirstLookup (ms: number) {
    const storage = new HeldLookups()
    const clock = testClock()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: clock.now })
    const hash = unknownHash()
    storage.add(hash)
    const slow = lookup.find(hash)
    await settled()
    clock.advance(ms)
    storage.answer()
    return { storage, clock, lookup, hash, first: await slow }
  }

  it('When a lookup took longer than 500 ms, then its answer is not kept and the next request looks the key up again', async () => {
    // Arrange, Act
    const { storage, lookup, hash, first } = await slowFirstLookup(600)
    const second = await find(storage, lookup, hash)

    // Assert
    assert.notEqual(first, undefined)
    assert.notEqual(second, undefined)
    assert.equal(storage.finds, 2)
  })

  it('When a lookup took 300 ms, then its answer is kept for the 200 ms left of the 500 counted from when it was sent', async () => {
    // Arrange
    const { storage, clock, lookup, hash } = await slowFirstLookup(300)

    // Act
    clock.advance(200)
    await find(storage, lookup, hash)
    const findsWithin = storage.finds
    clock.advance(1)
    await find(storage, lookup, hash)

    // Assert
    assert.equal(findsWithin, 1)
    assert.equal(storage.finds, 2)
  })

  it('When a token is unknown, then its answer is cached too', async () => {
    // Arrange
    const storage = new HeldLookups()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: testClock().now })
    const hash = unknownHash()

    // Act
    const first = await find(storage, lookup, hash)
    const second = await find(storage, lookup, hash)

    // Assert
    assert.equal(first, undefined)
    assert.equal(second, undefined)
    assert.equal(storage.finds, 1)
  })

  it('When a key belongs to the other environment, then find gives nothing', async () => {
    const storage = new HeldLookups()
    const lookup = createKeyLookup({ storage, environment: 'production', clock: testClock().now })
    const hash = unknownHash()
    storage.add(hash, 'staging')

    assert.equal(await find(storage, lookup, hash), undefined)
  })
})

describe('the Bloom filter', () => {
  it('When it holds five times the keys it was sized for, then it still says yes for every one of them', () => {
    // Arrange
    const filter = new BloomFilter(1000, 0.001)
    const hashes = Array.from({ length: 5000 }, () => randomHash())

    // Act
    for (const hash of hashes) filter.add(hash)

    // Assert
    assert.deepEqual(hashes.filter((hash) => !filter.has(hash)), [])
  })

  it('When an item is not a SHA-256 hex digest, then it is still found once added', () => {
    const filter = new BloomFilter(1000, 0.001)
    const items = ['h-1', '', 'PET', randomHash().toUpperCase()]
    for (const item of items) filter.add(item)
    assert.deepEqual(items.filter((item) => !filter.has(item)), [])
  })

  it('When it holds as many keys as it was sized for, then about 0.1 % of unknown hashes are false positives', () => {
    // Arrange
    const filter = new BloomFilter(20_000, 0.001)
    for (let i = 0; i < 20_000; i++) filter.add(randomHash())
    const unknown = randomBytes(32 * 100_000).toString('hex')

    // Act
    let positives = 0
    for (let i = 0; i < 100_000; i++) if (filter.has(unknown.slice(i * 64, i * 64 + 64))) positives++

    // Assert: 100 expected; a bound that a correct filter misses with a chance far below one in a million.
    assert.ok(positives < 200, `${positives} false positives in 100,000`)
  })
})

/** Lets every promise chain that is ready run to its end. */
async function settled (): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve))
}
