// One suite for every storage backend: each must store and answer alike.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Storage } from '../../src/db/storage.js'
import { INT64_MAX } from '../support/fixtures.js'

export function storageContract (name: string, open: () => Promise<Storage>): void {
  describe(`storage contract: ${name}`, () => {
    const withStorage = async (work: (storage: Storage) => Promise<void>) => {
      const storage = await open()
      try { await work(storage) } finally { await storage.close() }
    }

    it('When animals are created together, then each gets its own increasing id and all are stored', () => withStorage(async (storage) => {
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) =>
        storage.createPet({ name: `p${i}`, categoryId: BigInt(i + 1), status: 'available' })))
      const ids = created.map((p) => p.id)
      assert.equal(new Set(ids).size, 50)
      assert.deepEqual(ids, [...ids].sort((a, b) => (a < b ? -1 : 1)))
      for (const pet of created) assert.deepEqual(await storage.getPet(pet.id), pet)
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

    it('When an Idempotency-Key is live, then a second insert under it adds nothing and returns the first', () => withStorage(async (storage) => {
      const key = await storage.createApiKey({ name: 'k', plan: 'free', perMinute: null, perDay: null, environment: 'production', tokenHash: `h-${name}-1`, createdAt: 1000 })
      const pet = { name: 'i', categoryId: 1n, status: 'available' } as const
      const once = { apiKeyId: key.id, key: 'abc', requestHash: 'rh', createdAt: 5000, liveAfter: 0 }
      const [first, second] = await Promise.all([storage.createPetOnce(pet, once), storage.createPetOnce(pet, { ...once, requestHash: 'other', createdAt: 6000, liveAfter: 0 })])
      const otherKey = await storage.createPetOnce(pet, { ...once, key: 'def' })

      assert.equal(first.created, true)
      assert.deepEqual(second, { created: false, requestHash: 'rh', pet: first.pet })
      assert.equal(otherKey.created, true)
      assert.equal((await storage.listPets({ afterId: 0n, status: undefined, limit: 10 })).length, 2)
    }))

    it('When an Idempotency-Key has expired, then a new insert under it adds the animal and takes the key over', () => withStorage(async (storage) => {
      const key = await storage.createApiKey({ name: 'k', plan: 'free', perMinute: null, perDay: null, environment: 'production', tokenHash: `h-${name}-3`, createdAt: 1000 })
      const pet = { name: 'e', categoryId: 1n, status: 'available' } as const
      const first = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'a', createdAt: 5000, liveAfter: 0 })
      const later = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'b', createdAt: 9000, liveAfter: 5000 })
      const again = await storage.createPetOnce(pet, { apiKeyId: key.id, key: 'k1', requestHash: 'c', createdAt: 9500, liveAfter: 5000 })

      assert.equal(later.created, true)
      assert.notEqual(later.pet.id, first.pet.id)
      assert.deepEqual(again, { created: false, requestHash: 'b', pet: later.pet })
    }))

    it('When expired idempotency records are purged, then their animals stay', () => withStorage(async (storage) => {
      const key = await storage.createApiKey({ name: 'k', plan: 'free', perMinute: null, perDay: null, environment: 'production', tokenHash: `h-${name}-4`, createdAt: 1000 })
      const { pet } = await storage.createPetOnce({ name: 'p', categoryId: 1n, status: 'available' }, { apiKeyId: key.id, key: 'x', requestHash: 'h', createdAt: 5000, liveAfter: 0 })

      assert.equal(await storage.purgeIdempotentRequests(4999), 0)
      assert.equal(await storage.purgeIdempotentRequests(5000), 1)
      assert.deepEqual(await storage.getPet(pet.id), pet)
      const after = await storage.createPetOnce({ name: 'p', categoryId: 1n, status: 'available' }, { apiKeyId: key.id, key: 'x', requestHash: 'h', createdAt: 6000, liveAfter: 0 })
      assert.equal(after.created, true, 'the purged key no longer holds')
    }))

    it('When a key is created, found and revoked, then its record says so', () => withStorage(async (storage) => {
      const key = await storage.createApiKey({ name: 'ent', plan: 'enterprise', perMinute: 5, perDay: 50, environment: 'staging', tokenHash: `h-${name}-2`, createdAt: 1000 })
      assert.deepEqual(await storage.findApiKeyByTokenHash(`h-${name}-2`), key)
      assert.equal(key.revokedAt, null)
      assert.equal(await storage.revokeApiKey(key.id, 2000), true)
      assert.equal(await storage.revokeApiKey(key.id, 3000), false)
      assert.equal((await storage.findApiKeyByTokenHash(`h-${name}-2`))?.revokedAt, 2000)
      assert.ok((await storage.listApiKeys()).some((k) => k.id === key.id && k.revokedAt === 2000))
    }))

    it('When a secret is asked for twice, then it is the same 32 random bytes', () => withStorage(async (storage) => {
      const a = await storage.secret('cursor')
      const b = await storage.secret('cursor')
      assert.equal(a.length, 32)
      assert.deepEqual(a, b)
    }))
  })
}
