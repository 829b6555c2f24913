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
import type { IssuedToken, ApiKeyRecord, NewPetRecord, NewWebhookRecord, PetRecord, Storage } from '../../src/db/storage.js'
import { StorageUnavailableError } from '../../src/errors.js'
import { MAX_PAGE_SIZE } from '../../src/domain.js'
import { buildKeyRecord, buildPetRecord, INT64_MAX } from '../support/fixtures.js'

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
        storage.createPet(buildPetRecord({ name: `${tag}-${i}`, categoryId: BigInt(i + 1), status: 'available' }))))
      const later = await storage.createPet(newPet(`${tag}-later`))

      assert.equal(new Set(created.map((p) => p.id)).size, 50)
      for (const pet of created) assert.deepEqual(await storage.getPet(pet.id), pet)
      assert.ok(created.every((p) => p.id < later.id))
    }))

    it('When an int64 is stored, then it comes back exactly', () => withStorage(async (storage) => {
      const pet = await storage.createPet(buildPetRecord({ name: 'max', categoryId: INT64_MAX, status: 'sold' }))
      assert.equal((await storage.getPet(pet.id))?.categoryId, INT64_MAX)
    }))

    it('When an animal was not found, then it is found once added, and read again it is the bytes kept (only animals found are kept)', () => withStorage(async (storage) => {
      // Arrange: the id the next animal gets, asked for before it is there.
      const tag = uniqueTag()
      const first = await storage.createPet(newPet(`${tag}-first`))
      const before = await storage.getPetJson?.(first.id + 1n)

      // Act
      const added = await storage.createPet(buildPetRecord({ name: `${tag}-added`, categoryId: INT64_MAX, status: 'pending' }))
      const after = await storage.getPetJson?.(added.id)
      const again = await storage.getPetJson?.(added.id)

      // Assert
      assert.equal(added.id, first.id + 1n, 'no other animal was added in between')
      assert.equal(before, undefined)
      assert.equal(String(after), `{"id":${added.id},"name":"${tag}-added","categoryId":${INT64_MAX},"status":"pending"}`)
      assert.equal(again, after, 'the kept bytes, not a copy')
    }))

    it('When no enabled endpoint wants pet.created, then a new animal writes no event; once one does, each new animal writes its event', () => withStorage(async (storage) => {
      // Arrange: the events other tests left, fanned out; an endpoint that wants other types only.
      const endpoint = (events: NewWebhookRecord['events']): NewWebhookRecord =>
        ({ url: 'https://receiver.example/hook', events, description: 'contract', enabled: true, secret: Buffer.alloc(24, 1), createdAt: 1000, updatedAt: 1000 })
      while (await storage.fanOutEvents(500, 1000) > 0);
      const others = await storage.createWebhook(endpoint(['key.created']))

      // Act
      await storage.createPet(newPet(`${uniqueTag()}-unheard`))
      const unheard = await storage.fanOutEvents(500, 1000)
      const wanting = await storage.createWebhook(endpoint(['pet.created']))
      await Promise.all([1, 2].map(async (i) => await storage.createPet(newPet(`${uniqueTag()}-heard-${i}`))))
      const heard = await storage.fanOutEvents(500, 1000)
      await storage.deleteWebhook(wanting.id)
      await storage.deleteWebhook(others.id)

      // Assert
      assert.equal(unheard, 0, 'no event for an animal no endpoint wanted')
      assert.equal(heard, 2)
    }))

    it('When listing after an id with a status, then only later animals with that status come, in order, up to the limit', () => withStorage(async (storage) => {
      const statuses = ['available', 'pending', 'sold'] as const
      const created = []
      for (let i = 0; i < 12; i++) created.push(await storage.createPet(buildPetRecord({ name: `s${i}`, categoryId: 1n, status: statuses[i % 3] ?? 'available' })))
      const afterId = created[2]?.id ?? 0n
      const page = await storage.listPets({ afterId, status: 'sold', limit: 2 })
      assert.deepEqual(page.map((p) => p.name), ['s5', 's8'])
    }))

    it('When pages of every size from 1 to 101 are read, with a status and without, then each holds that many animals, the first ones after the id', () => withStorage(async (storage) => {
      const tag = uniqueTag()
      const created = await Promise.all(Array.from({ length: 210 }, (_, i) =>
        storage.createPet(buildPetRecord({ name: `${tag}-${i}`, categoryId: 1n, status: i % 2 === 0 ? 'sold' : 'pending' }))))
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
      await storage.changeApiKey(key.id, () => ({ revokedAt: 2000 }))
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

    it('When a key is made with its own cap of requests in flight, then every read gives it back, and a change sets it or takes it away (null)', () => withStorage(async (storage) => {
      // Arrange
      const tokenHash = `h-${randomUUID()}`
      const key = await storage.createApiKey(buildKeyRecord({ concurrency: 2, tokenHash }))
      const unset = await storage.createApiKey(buildKeyRecord())

      // Act
      const found = await storage.findApiKeyByTokenHash(tokenHash)
      const got = await storage.getApiKey(key.id)
      const listed = await storage.listApiKeys(key.id - 1, 1)
      const raised = await storage.changeApiKey(key.id, () => ({ concurrency: 10_000 }))
      const cleared = await storage.changeApiKey(key.id, () => ({ concurrency: null }))
      const given = await storage.changeApiKey(unset.id, () => ({ concurrency: 7 }))

      // Assert
      assert.equal(key.concurrency, 2)
      assert.equal(unset.concurrency, null)
      assert.deepEqual([found?.key, got, ...listed], [key, key, key])
      assert.equal(raised?.concurrency, 10_000)
      assert.deepEqual(cleared, { ...key, concurrency: null })
      assert.deepEqual(await storage.getApiKey(key.id), cleared)
      assert.deepEqual(given, { ...unset, concurrency: 7 })
    }))

    it('When no key has an id, then getting it gives undefined', () => withStorage(async (storage) => {
      assert.equal(await storage.getApiKey(2 ** 31 - 1), undefined)
    }))

    it('When tokens are listed after a number, then the later ones come, in the order issued, up to the limit, of revoked and other-environment keys too', () => withStorage(async (storage) => {
      const before = await storage.countTokens()
      const hashes: string[] = []
      let last: ApiKeyRecord | undefined
      for (const environment of ['production', 'staging', 'production'] as const) {
        const tokenHash = `h-${randomUUID()}`
        last = await storage.createApiKey(buildKeyRecord({ environment, tokenHash }))
        hashes.push(tokenHash)
      }
      await storage.changeApiKey(last?.id ?? 0, () => ({ revokedAt: 2000 }))

      // A token's number is not its key's id: rolled keys have several.
      const made = await issuedTokens(storage, hashes)
      const first = made[0] as IssuedToken
      const all = await storage.listTokenHashes(first.id - 1, 1000)
      const two = await storage.listTokenHashes(first.id - 1, 2)
      const past = await storage.listTokenHashes((made.at(-1)?.id ?? 0) + 1_000_000, 10)

      // Other tests may add keys meanwhile, with numbers in between.
      for (const token of made) assert.deepEqual(all.find((t) => t.id === token.id), token)
      assert.deepEqual(made.map((t) => t.id), made.map((t) => t.id).sort((x, y) => x - y))
      assert.ok(all.every((t) => t.id >= first.id))
      assert.deepEqual(all.map((t) => t.id), all.map((t) => t.id).sort((x, y) => x - y))
      assert.deepEqual(two, all.slice(0, 2))
      assert.deepEqual(past, [])
      assert.ok(await storage.countTokens() >= before + 3)
    }))

    it('When keys are listed after an id, up to a limit, then the later keys come, lowest id first, that many, revoked ones too', () => withStorage(async (storage) => {
      // Arrange
      const made: ApiKeyRecord[] = []
      for (let i = 0; i < 4; i++) made.push(await storage.createApiKey(buildKeyRecord({ name: `page-${i}` })))
      const [a, b, c, d] = made as [ApiKeyRecord, ApiKeyRecord, ApiKeyRecord, ApiKeyRecord]
      await storage.changeApiKey(c.id, () => ({ revokedAt: 2000 }))

      // Act
      const two = await storage.listApiKeys(a.id, 2)
      const rest = await storage.listApiKeys(b.id)
      const firstTwo = await storage.listApiKeys(undefined, 2)
      const past = await storage.listApiKeys(d.id + 1_000_000, 10)

      // Assert
      assert.deepEqual(two.map((k) => k.name), ['page-1', 'page-2'])
      assert.equal(two[1]?.revokedAt, 2000)
      assert.deepEqual(rest.slice(0, 2).map((k) => k.id), [c.id, d.id])
      assert.ok(rest.every((k) => k.id > b.id))
      assert.deepEqual(firstTwo, (await storage.listApiKeys()).slice(0, 2))
      assert.deepEqual(past, [])
    }))

    it('When a key is changed, then `change` sees the key as stored, and the changes are applied and kept; a field left out keeps its value', () => withStorage(async (storage) => {
      // Arrange
      const key = await storage.createApiKey(buildKeyRecord({ name: 'before', expiresAt: 8000 }))
      let seen: ApiKeyRecord | undefined

      // Act
      const changed = await storage.changeApiKey(key.id, (current) => {
        seen = current
        return { name: 'after', plan: 'enterprise', perMinute: 5, perDay: 50, scopes: ['pets:read'] }
      })
      const back = await storage.changeApiKey(key.id, () => ({ plan: 'pro', perMinute: null, perDay: null, expiresAt: null }))
      const revoked = await storage.changeApiKey(key.id, () => ({ revokedAt: 7000 }))
      const unchanged = await storage.changeApiKey(key.id, () => ({}))

      // Assert
      assert.deepEqual(seen, key)
      const expected = { ...key, name: 'after', plan: 'enterprise', perMinute: 5, perDay: 50, scopes: ['pets:read'] }
      assert.deepEqual(changed, expected)
      assert.deepEqual(back, { ...expected, plan: 'pro', perMinute: null, perDay: null, expiresAt: null })
      assert.deepEqual(revoked, { ...back, revokedAt: 7000 })
      assert.deepEqual(unchanged, revoked)
      assert.deepEqual(await storage.getApiKey(key.id), revoked)
    }))

    it('When `change` throws, then its error comes back as it is, nothing is changed, and the key can be changed afterwards', () => withStorage(async (storage) => {
      // Arrange
      const tokenHash = `h-${randomUUID()}`
      const key = await storage.createApiKey(buildKeyRecord({ tokenHash }))
      const refusal = new Error('refused by the rules')
      const tokensBefore = await storage.countTokens()

      // Act
      const failed = storage.changeApiKey(key.id, () => { throw refusal })
      await assert.rejects(failed, (error) => error === refusal)
      const later = await storage.changeApiKey(key.id, () => ({ name: 'later' }))

      // Assert
      assert.equal(await storage.countTokens(), tokensBefore)
      assert.deepEqual((await storage.findApiKeyByTokenHash(tokenHash))?.key, { ...key, name: 'later' })
      assert.deepEqual(later, { ...key, name: 'later' })
    }))

    it('When no key has the id, then a change gives undefined and `change` is never called', () => withStorage(async (storage) => {
      let called = false
      const changed = await storage.changeApiKey(2 ** 31 - 1, () => { called = true; return { name: 'x' } })
      assert.equal(changed, undefined)
      assert.equal(called, false)
    }))

    it('When a key is rolled with an overlap, then its token becomes the previous one until then, both tokens find the key, each marked, and the new token is issued next', () => withStorage(async (storage) => {
      // Arrange
      const [first, second] = [`h-${randomUUID()}`, `h-${randomUUID()}`]
      const key = await storage.createApiKey(buildKeyRecord({ tokenHash: first, tokenHint: 'pet_live_…aaaa' }))

      // Act
      const rolled = await storage.changeApiKey(key.id, () => ({ token: { hash: second, hint: 'pet_live_…bbbb', previousValidUntil: 9000 } }))

      // Assert
      const expected = { ...key, tokenHint: 'pet_live_…bbbb', previousTokenExpiresAt: 9000 }
      assert.deepEqual(rolled, expected)
      assert.deepEqual(await storage.getApiKey(key.id), expected)
      assert.deepEqual(await storage.findApiKeyByTokenHash(second), { key: expected, previous: false })
      assert.deepEqual(await storage.findApiKeyByTokenHash(first), { key: expected, previous: true })
      const [issuedFirst, issuedSecond] = await issuedTokens(storage, [first, second])
      assert.deepEqual(await storage.listTokenHashes(issuedFirst?.id ?? 0, 1), [issuedSecond])
    }))

    it('When a key is rolled again during the overlap, then the older previous token ends at once and the one just replaced takes its place', () => withStorage(async (storage) => {
      // Arrange
      const [first, second, third] = [`h-${randomUUID()}`, `h-${randomUUID()}`, `h-${randomUUID()}`]
      const key = await storage.createApiKey(buildKeyRecord({ tokenHash: first }))
      await storage.changeApiKey(key.id, () => ({ token: { hash: second, hint: 'pet_live_…bbbb', previousValidUntil: 9000 } }))

      // Act
      const again = await storage.changeApiKey(key.id, () => ({ token: { hash: third, hint: 'pet_live_…cccc', previousValidUntil: 12_000 } }))

      // Assert
      assert.deepEqual(again, { ...key, tokenHint: 'pet_live_…cccc', previousTokenExpiresAt: 12_000 })
      assert.equal(await storage.findApiKeyByTokenHash(first), undefined)
      assert.deepEqual(await storage.findApiKeyByTokenHash(second), { key: again, previous: true })
      assert.deepEqual(await storage.findApiKeyByTokenHash(third), { key: again, previous: false })
      const issued = await issuedTokens(storage, [first, second, third])
      assert.deepEqual(issued.map((t) => t.tokenHash), [first, second, third], 'every token stays issued, in order')
    }))

    it('When a key is rolled with no overlap, then its token before, and any previous one, no longer find it', () => withStorage(async (storage) => {
      // Arrange
      const [first, second, third] = [`h-${randomUUID()}`, `h-${randomUUID()}`, `h-${randomUUID()}`]
      const key = await storage.createApiKey(buildKeyRecord({ tokenHash: first }))
      await storage.changeApiKey(key.id, () => ({ token: { hash: second, hint: 'pet_live_…bbbb', previousValidUntil: 9000 } }))

      // Act
      const rolled = await storage.changeApiKey(key.id, () => ({ token: { hash: third, hint: 'pet_live_…cccc', previousValidUntil: null } }))

      // Assert
      assert.deepEqual(rolled, { ...key, tokenHint: 'pet_live_…cccc', previousTokenExpiresAt: null })
      assert.equal(await storage.findApiKeyByTokenHash(first), undefined)
      assert.equal(await storage.findApiKeyByTokenHash(second), undefined)
      assert.deepEqual(await storage.findApiKeyByTokenHash(third), { key: rolled, previous: false })
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

    it('When keys are searched, then text matches a name in any case, % and _ are text, state and plan filter, and pages by last use follow each other', () => withStorage(async (storage) => {
      // Arrange: four keys named with a tag no other test uses; one revoked, one expired, two used.
      const tag = uniqueTag()
      const now = 1_000_000
      const a = await storage.createApiKey(buildKeyRecord({ name: `${tag} Alpha`, plan: 'pro' }))
      const b = await storage.createApiKey(buildKeyRecord({ name: `${tag} b%_b`, expiresAt: now - 1 }))
      const c = await storage.createApiKey(buildKeyRecord({ name: `${tag} gamma` }))
      const d = await storage.createApiKey(buildKeyRecord({ name: `${tag} delta` }))
      await storage.changeApiKey(c.id, () => ({ revokedAt: now - 5 }))
      await storage.addUsage([], new Map([[d.id, now - 10], [b.id, now - 20]]))
      const search = async (more: Partial<Parameters<Storage['searchApiKeys']>[0]> = {}): Promise<number[]> =>
        (await storage.searchApiKeys({ text: tag.toUpperCase(), sort: 'id', now, limit: 10, ...more })).map((key) => key.id)

      // Act
      const all = await search()
      const literal = await search({ text: `${tag} b%_` })
      const wildcard = await search({ text: `${tag} %a` })
      const byId = await search({ text: String(a.id) })
      const states = [await search({ state: 'active' }), await search({ state: 'expired' }), await search({ state: 'revoked' })]
      const pro = await search({ plan: 'pro' })
      const first = await storage.searchApiKeys({ text: tag, sort: 'lastUsed', now, limit: 3 })
      const last = first.at(-1)
      const rest = await search({ sort: 'lastUsed', after: { id: last?.id ?? 0, lastUsedAt: last?.lastUsedAt ?? null } })

      // Assert
      assert.deepEqual(all, [a.id, b.id, c.id, d.id])
      assert.deepEqual(literal, [b.id])
      assert.deepEqual(wildcard, [])
      assert.ok(byId.includes(a.id))
      assert.deepEqual(states, [[a.id, d.id], [b.id], [c.id]])
      assert.deepEqual(pro, [a.id])
      assert.deepEqual(first.map((key) => key.id), [d.id, b.id, a.id])
      assert.deepEqual(rest, [c.id])
    }))

    it('When usage is summed over every key, then each day adds up every key\'s rows, the busiest keys come most first, and keys are counted by state and plan', () => withStorage(async (storage) => {
      // Arrange: days no other test writes to.
      const day = 40_000 + Math.floor(Math.random() * 10_000) * 3
      const now = 9_000_000
      const before = await storage.countApiKeys(now)
      const one = await newApiKey(storage)
      const two = await storage.createApiKey(buildKeyRecord({ plan: 'business' }))
      await storage.addUsage([
        { keyId: one.id, day, admitted: 3, refused: 1 },
        { keyId: two.id, day, admitted: 10, refused: 0 },
        { keyId: one.id, day: day + 2, admitted: 1, refused: 0 }
      ], new Map())

      // Act
      const totals = await storage.usageTotals(day, day + 2)
      const busiest = await storage.busiestKeys(day, 1)
      const after = await storage.countApiKeys(now)

      // Assert
      assert.deepEqual(totals, [{ day, admitted: 13, refused: 1 }, { day: day + 2, admitted: 1, refused: 0 }])
      assert.deepEqual(busiest.map((row) => [row.key.id, row.admitted, row.refused]), [[two.id, 10, 0]])
      const count = (counts: typeof after, plan: string): number => counts.find((row) => row.state === 'active' && row.plan === plan)?.count ?? 0
      assert.equal(count(after, 'free') - count(before, 'free'), 1)
      assert.equal(count(after, 'business') - count(before, 'business'), 1)
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
          storage.changeApiKey(key.id, () => ({ revokedAt: 2000 }))])
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
      const revoked = await storage.changeApiKey(key.id, () => ({ revokedAt: 2000 }))

      // Assert
      assert.deepEqual(await storage.getPet(pet.id), pet)
      assert.equal(revoked?.revokedAt, 2000)
    }))
  })
}

function newPet (name: string): NewPetRecord {
  return buildPetRecord({ name })
}

/** A name no other test, and no earlier run on the same database, has used. */
function uniqueTag (): string {
  return `t-${randomUUID()}`
}

/** A key of its own: token hashes are unique, and the database may hold an earlier run's. */
function newApiKey (storage: Storage): Promise<ApiKeyRecord> {
  return storage.createApiKey(buildKeyRecord())
}

/** The tokens with these hashes as the storage lists them, in the order issued; fails unless each is there. */
async function issuedTokens (storage: Storage, hashes: readonly string[]): Promise<IssuedToken[]> {
  const found: IssuedToken[] = []
  for (let after = 0; ;) {
    const page = await storage.listTokenHashes(after, 1000)
    found.push(...page.filter((t) => hashes.includes(t.tokenHash)))
    const last = page.at(-1)
    if (last === undefined) break
    after = last.id
  }
  assert.deepEqual(new Set(found.map((t) => t.tokenHash)), new Set(hashes), 'a token was not issued')
  return found
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
