// The client library (client/, `petstore-client`) against the service as
// operators run it: `petstore serve` in its own process on a real port, a
// key made with `petstore keys create`, the client's default fetch.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PetstoreClient, PetstoreError, type Pet } from 'petstore-client'
import { createKey, makeTempDir, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'
import { INT64_MAX } from '../support/fixtures.js'

/** The client's time budget for each call. */
const REQUEST_TIMEOUT_MS = 5_000

describe('the client library against the service on a real port', { timeout: 60_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let baseUrl = ''
  let apiKey = ''

  const client = (options: Partial<ConstructorParameters<typeof PetstoreClient>[0]> = {}): PetstoreClient =>
    new PetstoreClient({ baseUrl, apiKey, timeoutMs: REQUEST_TIMEOUT_MS, onDeprecation: () => {}, ...options })

  /** Every animal in the database, by the client itself. */
  async function everyPet (): Promise<Pet[]> {
    const pets: Pet[] = []
    for await (const pet of client().allPets({ limit: 100 })) pets.push(pet)
    return pets
  }

  before(async () => {
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    server = await startServer(env)
    baseUrl = `${server.origin}/v1`
    apiKey = (await createKey(env, ['--plan', 'business', '--name', 'client'])).token
  })

  after(async () => {
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When an animal is created, then it is listed and read back as created, and rateLimit follows each response', async () => {
    // Arrange
    const petstore = client()

    // Act
    const created = await petstore.createPet({ name: 'Rex', categoryId: 3, status: 'pending' })
    const page = await petstore.listPets({ status: 'pending' })
    const read = await petstore.getPet(created.id)

    // Assert
    assert.equal(typeof created.id, 'bigint')
    assert.deepEqual(created, { id: created.id, name: 'Rex', categoryId: 3n, status: 'pending' })
    assert.ok(page.pets.some((pet) => pet.id === created.id))
    assert.deepEqual(read, created)
    // The business plan's minute window, less these three requests (fewer, if a new minute began in between).
    assert.equal(petstore.rateLimit?.limit, 1000)
    assert.ok([997, 998, 999].includes(petstore.rateLimit?.remaining ?? 0), `remaining: ${petstore.rateLimit?.remaining}`)
    assert.ok((petstore.rateLimit?.resetAt.getTime() ?? 0) > Date.now())
  })

  it('When there are more animals than a page holds, then listPets pages by cursor and allPets walks every page in id order', async () => {
    // Arrange: the only sold animals in this database.
    const petstore = client()
    const created: bigint[] = []
    for (let i = 0; i < 7; i++) created.push((await petstore.createPet({ name: `Sold ${i}`, categoryId: 1, status: 'sold' })).id)

    // Act
    const first = await petstore.listPets({ status: 'sold', limit: 3 })
    const second = await petstore.listPets({ status: 'sold', limit: 3, cursor: first.nextCursor })
    const walked: bigint[] = []
    for await (const pet of petstore.allPets({ status: 'sold', limit: 3 })) walked.push(pet.id)

    // Assert
    assert.deepEqual(first.pets.map((pet) => pet.id), created.slice(0, 3))
    assert.deepEqual(second.pets.map((pet) => pet.id), created.slice(3, 6))
    assert.ok(second.nextCursor !== undefined)
    assert.deepEqual(walked, created)
  })

  it('When a categoryId of 9223372036854775807n is sent, then it comes back exactly, from create, list and getPet', async () => {
    // Arrange
    const petstore = client()

    // Act
    const created = await petstore.createPet({ name: 'Big', categoryId: INT64_MAX })
    const listed = (await everyPet()).find((pet) => pet.id === created.id)
    const read = await petstore.getPet(created.id)

    // Assert
    assert.equal(created.categoryId, INT64_MAX)
    assert.equal(listed?.categoryId, INT64_MAX)
    assert.equal(read.categoryId, INT64_MAX)
  })

  it('When a create is sent twice with its Idempotency-Key, then the service replays the first animal and adds none', async () => {
    // Arrange: a fetch that sends each create twice, as a retry after a lost response would.
    const replies: Response[] = []
    const twice = async (request: Request): Promise<Response> => {
      if (request.method !== 'POST') return await fetch(request)
      replies.push(await fetch(request.clone()))
      const again = await fetch(request)
      replies.push(again)
      return again
    }
    const before = (await everyPet()).length

    // Act
    const pet = await client({ fetch: twice }).createPet({ name: 'Twice', categoryId: 2 })

    // Assert
    assert.deepEqual(replies.map((reply) => reply.status), [201, 201])
    assert.equal(replies[1]?.headers.get('idempotent-replayed'), 'true')
    assert.equal((await everyPet()).length, before + 1)
    assert.equal((await everyPet()).filter((p) => p.name === 'Twice').length, 1)
    assert.equal(pet.name, 'Twice')
  })

  it('When a create\'s response is lost in a network error, then the client sends it again with the same key and the service holds exactly one animal', async (t) => {
    // Arrange: the first response is read by the fetch, then lost.
    const keys: Array<string | null> = []
    let lose = true
    let lost: () => void = () => {}
    const responseLost = new Promise<void>((resolve) => { lost = resolve })
    const lossy = async (request: Request): Promise<Response> => {
      keys.push(request.headers.get('idempotency-key'))
      const response = await fetch(request)
      if (!lose) return response
      lose = false
      await response.arrayBuffer()
      lost()
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') })
    }
    const petstore = client({ fetch: lossy })
    const before = (await everyPet()).length
    t.mock.timers.enable({ apis: ['setTimeout'] })

    // Act
    const creating = petstore.createPet({ name: 'Lost once', categoryId: 4 })
    await responseLost
    await new Promise((resolve) => setImmediate(resolve))
    t.mock.timers.runAll()
    const pet = await creating
    t.mock.timers.reset()

    // Assert
    assert.equal(keys.length, 2)
    assert.ok(keys[0] !== null && keys[0] !== undefined)
    assert.equal(keys[1], keys[0])
    const pets = await everyPet()
    assert.equal(pets.length, before + 1)
    assert.deepEqual(pets.filter((p) => p.name === 'Lost once'), [pet])
  })

  it('When getPet asks for an animal that does not exist, then a PetstoreError says not_found with status 404', async () => {
    // Act
    const error = await client().getPet(999_999_999n).catch((e: unknown) => e)

    // Assert
    assert.ok(error instanceof PetstoreError)
    assert.equal(error.code, 'not_found')
    assert.equal(error.status, 404)
    assert.equal(error.response?.headers.get('deprecation'), '@1795132800')
  })
})
