// The hash an Idempotency-Key's first request is stored with: a retry after
// an upgrade is compared with it, so it must not change for a body that was
// valid before (docs/DEVELOPING.md: Adding a field to the animal).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { CreateOnceResult, IdempotencyRecord, NewPetRecord, PetStore } from '../../src/db/storage.js'
import type { CursorCodec } from '../../src/pets/cursor.js'
import { PetService } from '../../src/pets/service.js'
import type { NewPet } from '../../src/schemas/pet.js'

/**
 * A body with every field, and another value for each: a new field of
 * NewPet fails the build here until it is given one.
 */
const FULL_BODY = { name: 'Rex', categoryId: 1n, status: 'pending' } satisfies Required<NewPet>
const OTHER_VALUES = { name: 'Rexa', categoryId: 2n, status: 'sold' } satisfies Required<NewPet>

/** The hash the service stores for a body, read from the storage it hands it to. */
async function storedHash (body: NewPet): Promise<string> {
  let requestHash: string | undefined
  const storage = {
    async createPetOnce (pet: NewPetRecord, idempotency: IdempotencyRecord): Promise<CreateOnceResult> {
      requestHash = idempotency.requestHash
      return { created: true, pet: { id: 1n, ...pet } }
    }
  } as unknown as PetStore // only createPetOnce is reached with a key
  const service = new PetService(storage, {} as unknown as CursorCodec, () => 0) // no cursor is read or written
  await service.create(body, { apiKeyId: 1, idempotencyKey: 'k' })
  assert.ok(requestHash !== undefined)
  return requestHash
}

describe('the hash of a request with an Idempotency-Key', () => {
  it('When a body of each form stored before is hashed, then its hash is the one stored for it then', async () => {
    // Arrange
    const withStatus: NewPet = { name: 'Rex', categoryId: 9_007_199_254_740_993n, status: 'pending' }
    const withoutStatus: NewPet = { name: 'Ünïcode "quoted"', categoryId: 1n }

    // Act
    const hashes = [await storedHash(withStatus), await storedHash(withoutStatus)]

    // Assert: the values the service computed before its fields were derived from the schema.
    assert.deepEqual(hashes, [
      '506b92214eb104e13934e8b50cece2fc28756e236330aca5ca050b4b73a333fc',
      '49fd6b8283b834a137c7fb128618a8baf7fc21881e553569d1dc31b2d76ad060'
    ])
  })

  it('When a body differs from another in any one field, sent or left out, then the two hashes differ', async () => {
    // Arrange
    const fields = Object.keys(FULL_BODY) as Array<keyof NewPet>
    const changed = fields.map((field) => ({ ...FULL_BODY, [field]: OTHER_VALUES[field] }))
    const leftOut = fields.map((field) => ({ ...FULL_BODY, [field]: undefined }))

    // Act
    const full = await storedHash(FULL_BODY)
    const hashes = await Promise.all([...changed, ...leftOut].map(storedHash))

    // Assert: leaving out a required field is refused before the service; hashed, it still differs.
    hashes.forEach((hash, i) => assert.notEqual(hash, full, `the body with ${fields[i % fields.length]} ${i < fields.length ? 'changed' : 'left out'} hashes as the full one`))
    assert.equal(new Set(hashes).size, hashes.length, 'two bodies that differ hash alike')
  })
})
