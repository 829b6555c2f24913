// One suite for every storage backend: each must store and answer alike.
//
// It asks of a backend only what every backend can give. The database may
// already hold rows (a PostgreSQL database outlives the suite, and earlier
// tests leave theirs), so each test counts only the rows it made itself.
// Concurrent calls may be served in any order, so no test expects the
// order in which it made them.
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { IssuedToken, ApiKeyRecord, NewPetRecord, PetRecord, Storage } from '../../src/db/storage.js'
import { StorageUnavailableError } from '../../src/errors.js'
import { MAX_PAGE_SIZE } from '../../src/schemas/pet.js'
import { INT64_MAX, buildKeyRecord } from '../support/fixtures.js'

/** What a backend gives the suite, once per test. */
export interface StorageHarness {
  /** A storage on the backend's test database; it may hold other tests' rows. */
  storage: Storage
  /** How long a call may wait for an unavailable database before failing with StorageUnavailableError: the backend's own setting, made short for the suite. */
  budgetMs: number
  /**
   * Makes the database unavailable to `storage` as it can be in production
   * (SQLite: another connection holds the write lock), and resolves to a
   * function that makes it available again.
   */
  makeUnavailable (): Promise<() => Promise<void>>
}

/** How far past its budget a call may end: the test machine may be busy. */
const SLACK_MS = 1000
/** When the purge test's idempotency record is made: no other test makes one then, so a purge up to it counts that one alone. */
const PURGE_TEST_INSTANT = 7777

export function storageContract (name: string, open: () => Promise<StorageHarness>): void {
  describe(`storage contract: ${name}`, () => {
    const withHarness = async (work: (harness: StorageHarness) => Promise<void>) => {
      const harness = await open()
      try { await work(harness) } finally { await harness.storage.close() }
    }
    const withStorage = (work: (storage: Storage) => Promise<void>) => withHarness(({ storage }) => work(storage))

    it('When animals are created together, then each gets its own id, all are stored, and a later one gets a higher id', () => withStorage(async (storage) => {
      const tag = uniqueTag()
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) =>
        storage.createPet({ name: `${tag}-${i}`, categoryId: BigInt(i + 1), status: 'available' })))
      const later = await storage.createPet(newPet(`${tag}-later`))

      assert.equal(new Set(created.map((p) => p.id)).size, 50)
      for (const pet of created) assert.deepEqual(await storage.getPet(pet.id), pet)
      assert.ok(created.every((p) => p.id < later.id))
    }))

    it('When an int64 is stored, then it comes back exactly', () => withStorage(async (storage) => {
      const pet = await storage.createPet({ name: 'max', categoryId: INT64_MAX, status: 'sold' })
      assert.equal((await storage.getPet(pet.id))?.categoryId, INT64_MAX)
    }))

    it('When listing after an id with a status, then only later animals with that status come, in order, up to the limit', () => withStorage(async (storage) => {
      const statuses = ['available', 'pending', 'sold'] as const
      const created = []
      for (let i = 0; i < 12; i++) created.push(await storage.createPet({ name: `s${i}`, categoryId: 1n, status: statuses[i % 3] ?? 'available' }))
      const afterId = created[2]?.id ?? 0n
      const page = await storage.listPets({ afterId, status: 'sold', limit: 2 })
      assert.deepEqual(page.map((p) => p.name), ['s5', 's8'])
    }))

    it('When pages of every size from 1 to 101 are read, with a status and without, then each holds that many animals, the first ones after the id', () => withStorage(async (storage) => {
      const tag = uniqueTag()
      const created = await Promise.all(Array.from({ length: 210 }, (_, i) =>
        storage.createPet({ name: `${tag}-${i}`, categoryId: 1n, status: i % 2 === 0 ? 'sold' : 'pending' })))
      const first = created.reduce((a, b) => (b.id < a.id ? b : a))
      const afterId = first.id - 1n
      const ours = (pets: Array<{ name: string }>) => pets.filter((p) => p.name.startsWith(`${tag}-`))
      // Every page size a request can ask for, and the one more row read to see whether another page follows.
      for (let limit = 1; limit <= MAX_PAGE_SIZE + 1; limit++) {
        const all = await storage.listPets({ afterId, status: undefined, limit })
        assert.equal(ours(all).length, limit, `a page of ${limit}`)
        assert.equal(all[0]?.id, first.id)
        const sold = await storage.listPets({ afterId, status: 'sold', limit })
        assert.equal(ours(sold).length, limit, `a page of ${limit} sold`)
        assert.ok(sold.every((p) => p.status === 'sold'))
      }
    }))

    it('When two inserts under one Idempotency-Key race, then exactly one adds the animal and the other returns it', () => withStorage(async (storage) => {
      // Arrange
      const key = await newApiKey(storage)
      const tag = uniqueTag()
      const mark = await storage.createPet(newPet(`${tag}-mark`))
      const once = { apiKeyId: key.id, key: 'abc', createdAt: 5000, liveAfter: 0 }

      // Act
      const [a, b] = await Promise.all([
        storage.createPetOnce(newPet(tag), { ...once, requestHash: 'hash-a' }),
        storage.createPetOnce(newPet(tag), { ...once, requestHash: 'hash-b', createdAt: 6000 })])
      const otherKey = await storage.createPetOnce(newPet(tag), { ...once, key: 'def', requestHash: 'hash-c' })

      // Assert
      assert.equal([a, b].filter((r) => r.created).length, 1)
      const [winner, loser, winnerHash] = a.created ? [a, b, 'hash-a'] : [b, a, 'hash-b']
      assert.deepEqual(loser, { created: false, requestHash: winnerHash, pet: winner.pet })
      assert.equal(otherKey.created, true)
      assert.deepEqual(new Set((await petsNamed(storage, tag, mark.id)).map((p) => p.id)), new Set([winner.pet.id, otherKey.pet.id]))
    }))

    it('When an Idempotency-Key has expired, then a new insert under it adds the animal and takes the key over', () => withStorage(async (storage) => {
      const key = await newApiKey(storage)
      const pet = newPet('e')
      const first = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'a', createdAt: 5000, liveAfter: 0 })
      const later = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'b', createdAt: 9000, liveAfter: 5000 })
      const again = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'c', createdAt: 9500, liveAfter: 5000 })

      assert.equal(later.created, true)
      assert.notEqual(later.pet.id, first.pet.id)
      assert.deepEqual(again, { created: false, requestHash: 'b', pet: later.pet })
    }))

    it('When idempotency records are purged up to an instant, then those made by then go, later ones stay, and their animals stay', () => withStorage(async (storage) => {
      // Arrange
      const at = PURGE_TEST_INSTANT
      const key = await newApiKey(storage)
      const once = { apiKeyId: key.id, key: 'x', requestHash: 'h', createdAt: at, liveAfter: 0 }
      const { pet } = await storage.createPetOnce(newPet('p'), once)

      // Act
      await storage.purgeIdempotentRequests(at - 1)
      const kept = await storage.createPetOnce(newPet('p'), { ...once, createdAt: at + 1 })
      const purged = await storage.purgeIdempotentRequests(at)
      const after = await storage.createPetOnce(newPet('p'), { ...once, createdAt: at + 2 })

      // Assert
      assert.equal(kept.created, false, 'a record made after the instant stays')
      assert.equal(purged, 1)
      assert.deepEqual(await storage.getPet(pet.id), pet)
      assert.equal(after.created, true, 'the purged key no longer holds')
    }))

    it('When a key is created, found and revoked, then its record says so', () => withStorage(async (storage) => {
      const tokenHash = `h-${randomUUID()}`
      const key = await storage.createApiKey(buildKeyRecord({ name: 'ent', plan: 'enterprise', perMinute: 5, perDay: 50, environment: 'staging', tokenHash }))
      assert.deepEqual(await storage.findApiKeyByTokenHash(tokenHash), { key, previous: false })
      assert.equal(key.revokedAt, null)
      assert.equal(await storage.revokeApiKey(key.id, 2000), true)
      assert.equal(await storage.revokeApiKey(key.id, 3000), false)
      assert.equal((await storage.findApiKeyByTokenHash(tokenHash))?.key.revokedAt, 2000)
      assert.ok((await storage.listApiKeys()).some((k) => k.id === key.id && k.revokedAt === 2000))
    }))

    it('When a key is created with scopes, an expiry and a hint, then it is found, got by id and listed with them, and has not been used', () => withStorage(async (storage) => {
      const readOnly = await storage.createApiKey(buildKeyRecord({ scopes: ['pets:read'], tokenHint: 'pet_live_…Wx3k', expiresAt: 5000, createdAt: 1000 }))
      const writeOnly = await storage.createApiKey(buildKeyRecord({ scopes: ['pets:write'], tokenHint: 'pet_test_…0aZ9', environment: 'staging' }))
      assert.deepEqual(
        [readOnly.scopes, readOnly.tokenHint, readOnly.expiresAt, readOnly.lastUsedAt],
        [['pets:read'], 'pet_live_…Wx3k', 5000, null])
      assert.deepEqual([writeOnly.scopes, writeOnly.tokenHint, writeOnly.expiresAt], [['pets:write'], 'pet_test_…0aZ9', null])
      assert.deepEqual(await storage.getApiKey(readOnly.id), readOnly)
      assert.deepEqual(await storage.getApiKey(writeOnly.id), writeOnly)
      const listed = await storage.listApiKeys()
      assert.deepEqual(listed.filter((key) => key.id === readOnly.id || key.id === writeOnly.id), [readOnly, writeOnly])
    }))

    it('When no key has an id, then getting it gives undefined', () => withStorage(async (storage) => {
      assert.equal(await storage.getApiKey(2 ** 31 - 1), undefined)
    }))

    it('When key hashes are listed after an id, then the later keys come, lowest id first, up to the limit, revoked and other-environment keys too', () => withStorage(async (storage) => {
      const before = await storage.countTokens()
      const made = [] as Array<{ id: number, tokenHash: string }>
      for (const environment of ['production', 'staging', 'production'] as const) {
        const tokenHash = `h-${randomUUID()}`
        const key = await storage.createApiKey(buildKeyRecord({ environment, tokenHash }))
        made.push({ id: key.id, tokenHash })
      }
      const [first, , last] = made as [IssuedToken, IssuedToken, IssuedToken]
      await storage.revokeApiKey(last.id, 2000)

      const all = await storage.listTokenHashes(first.id - 1, 1000)
      const two = await storage.listTokenHashes(first.id - 1, 2)
      const past = await storage.listTokenHashes(last.id + 1_000_000, 10)

      // Other tests may add keys meanwhile, with ids in between.
      for (const key of made) assert.deepEqual(all.find((k) => k.id === key.id), key)
      assert.ok(all.every((k) => k.id >= first.id))
      assert.deepEqual(all.map((k) => k.id), all.map((k) => k.id).sort((x, y) => x - y))
      assert.deepEqual(two, all.slice(0, 2))
      assert.deepEqual(past, [])
      assert.ok(await storage.countTokens() >= before + 3)
    }))

    it('When two instances add usage to the same keys and days, then the counts add up, and each key\'s last use only moves forward', async () => {
      // Arrange: two storages on one database, as two instances have.
      const first = (await open()).storage
      const second = (await open()).storage
      try {
        const key = await newApiKey(first)
        const other = await newApiKey(first)

        // Act
        await first.addUsage([{ keyId: key.id, day: 20_000, admitted: 3, refused: 1 }], new Map([[key.id, 5_000]]))
        await Promise.all([
          second.addUsage([{ keyId: key.id, day: 20_000, admitted: 4, refused: 0 }, { keyId: other.id, day: 20_000, admitted: 1, refused: 0 }],
            new Map([[key.id, 4_000], [other.id, 7_000]])),
          first.addUsage([{ keyId: key.id, day: 20_000, admitted: 0, refused: 2 }, { keyId: key.id, day: 20_001, admitted: 6, refused: 0 }],
            new Map([[key.id, 9_000]]))
        ])
        await second.addUsage([{ keyId: key.id, day: 20_001, admitted: 1, refused: 1 }], new Map([[key.id, 8_000]]))
        await first.addUsage([], new Map())

        // Assert
        assert.deepEqual(await second.usageOf(key.id, 20_000, 20_001), [
          { keyId: key.id, day: 20_000, admitted: 7, refused: 3 },
          { keyId: key.id, day: 20_001, admitted: 7, refused: 1 }
        ])
        assert.deepEqual(await first.usageOf(other.id, 20_000, 20_001), [{ keyId: other.id, day: 20_000, admitted: 1, refused: 0 }])
        assert.equal((await first.getApiKey(key.id))?.lastUsedAt, 9_000, 'the latest use stays, whichever instance wrote last')
        assert.equal((await second.getApiKey(other.id))?.lastUsedAt, 7_000)
      } finally {
        await first.close()
        await second.close()
      }
    })

    it('When usage is read for a range of days, then only that key\'s stored days within it come, oldest first; a key never used has none', () => withStorage(async (storage) => {
      // Arrange: written newest first, with a day on each side of the range and another key's day within it.
      const key = await newApiKey(storage)
      const other = await newApiKey(storage)
      const unused = await newApiKey(storage)
      await storage.addUsage([30_005, 30_003, 30_001, 29_999].map((day) => ({ keyId: key.id, day, admitted: day - 29_990, refused: 1 })), new Map())
      await storage.addUsage([{ keyId: other.id, day: 30_002, admitted: 1, refused: 0 }], new Map())

      // Act
      const within = await storage.usageOf(key.id, 30_000, 30_004)
      const oneDay = await storage.usageOf(key.id, 30_005, 30_005)
      const none = await storage.usageOf(unused.id, 0, 40_000)

      // Assert
      assert.deepEqual(within, [
        { keyId: key.id, day: 30_001, admitted: 11, refused: 1 },
        { keyId: key.id, day: 30_003, admitted: 13, refused: 1 }
      ])
      assert.deepEqual(oneDay, [{ keyId: key.id, day: 30_005, admitted: 15, refused: 1 }], 'both ends are included')
      assert.deepEqual(none, [])
      assert.equal((await storage.getApiKey(unused.id))?.lastUsedAt, null)
    }))

    it('When a secret is asked for twice, then it is the same 32 random bytes', () => withStorage(async (storage) => {
      const a = await storage.secret('cursor')
      const b = await storage.secret('cursor')
      assert.equal(a.length, 32)
      assert.deepEqual(a, b)
    }))

    it('When the database is unavailable, then writes fail as unavailable within the budget, and so does ping after them', () => withHarness(async ({ storage, budgetMs, makeUnavailable }) => {
      // Arrange
      const key = await newApiKey(storage)
      const restore = await makeUnavailable()
      try {
        // Act
        const started = Date.now()
        const writes = await Promise.allSettled([
          storage.createPet(newPet('late')),
          storage.createPetOnce(newPet('late'), { apiKeyId: key.id, key: 'late', requestHash: 'h', createdAt: 5000, liveAfter: 0 }),
          storage.revokeApiKey(key.id, 2000)])
        const writesMs = Date.now() - started
        const ping = await settle(() => storage.ping())

        // Assert
        for (const write of writes) {
          assert.equal(write.status, 'rejected')
          assert.ok(write.status === 'rejected' && write.reason instanceof StorageUnavailableError, String(write.status === 'rejected' && write.reason))
        }
        assert.ok(writesMs <= budgetMs + SLACK_MS, `the writes failed after ${writesMs} ms; the budget is ${budgetMs} ms`)
        assert.ok(ping.error instanceof StorageUnavailableError, `ping: ${String(ping.error)}`)
        assert.ok(ping.ms <= budgetMs + SLACK_MS, `ping failed after ${ping.ms} ms; the budget is ${budgetMs} ms`)
      } finally {
        await restore()
      }
    }))

    it('When the database is available again, then ping and writes succeed', () => withHarness(async ({ storage, makeUnavailable }) => {
      // Arrange
      const key = await newApiKey(storage)
      const restore = await makeUnavailable()
      try {
        await assert.rejects(storage.createPet(newPet('late')), StorageUnavailableError)
      } finally {
        await restore()
      }

      // Act
      await storage.ping()
      const pet = await storage.createPet(newPet('now'))
      const revoked = await storage.revokeApiKey(key.id, 2000)

      // Assert
      assert.deepEqual(await storage.getPet(pet.id), pet)
      assert.equal(revoked, true)
    }))
  })
}

function newPet (name: string): NewPetRecord {
  return { name, categoryId: 1n, status: 'available' }
}

/** A name no other test, and no earlier run on the same database, has used. */
function uniqueTag (): string {
  return `t-${randomUUID()}`
}

/** A key of its own: token hashes are unique, and the database may hold an earlier run's. */
function newApiKey (storage: Storage): Promise<ApiKeyRecord> {
  return storage.createApiKey(buildKeyRecord())
}

/** Every stored animal called `name` with an id above `afterId`, page by page. */
async function petsNamed (storage: Storage, name: string, afterId: bigint): Promise<PetRecord[]> {
  const found: PetRecord[] = []
  for (let from = afterId; ;) {
    const page = await storage.listPets({ afterId: from, status: undefined, limit: 100 })
    found.push(...page.filter((p) => p.name === name))
    const last = page.at(-1)
    if (last === undefined || page.length < 100) return found
    from = last.id
  }
}

/** How a call ended, and after how long. */
async function settle (call: () => Promise<unknown>): Promise<{ error: unknown, ms: number }> {
  const started = Date.now()
  try {
    await call()
    return { error: undefined, ms: Date.now() - started }
  } catch (error) {
    return { error, ms: Date.now() - started }
  }
}
