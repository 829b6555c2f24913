// On SQLite and on PostgreSQL a page's JSON, and an animal's, is written by
// the database, not by the response schema's serializer. These tests hold it
// to the serializer's bytes: two apps on one database, one reading the
// database's JSON and one the rows (the same storage with the JSON methods
// taken away), asked the same things in turn, must answer alike, header for
// header and byte for byte.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from '../support/app.js'
import { bearer, buildPetRecord, INT64_MAX } from '../support/fixtures.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import type { NewPetRecord, Storage } from '../../src/db/storage.js'
import { timedStorage } from '../../src/db/timed.js'
import type { PetStatus } from '../../src/domain.js'

/** Names that make a JSON writer escape, or choose not to: quotes, backslashes, controls, astral and separator characters. */
const NAMES = [
  'Rex', 'say "hi"', 'back\\slash', 'a/b', 'tab\there', 'line\nbreak', '\u0001\u001f\u007f', 'é, ñ and ü', 'Rex 🐕‍🦺',
  '\u2028\u2029', '<script>', '  inner  spaces  ', 'x'.repeat(100), '{"id":1}', ',{"id":2}', '日本語の名前'
]
const STATUSES: PetStatus[] = ['available', 'pending', 'sold']

function animal (i: number): NewPetRecord {
  return buildPetRecord({
    name: NAMES[i % NAMES.length] ?? 'Rex',
    categoryId: i % 7 === 0 ? INT64_MAX - BigInt(i) : BigInt(i % 40 + 1),
    status: STATUSES[i % 3] ?? 'available'
  })
}

/** The headers that must match: all but the request id, which is new for each request. */
function comparable (response: LightMyRequestResponse): { status: number, headers: Record<string, unknown>, body: string } {
  const { 'x-request-id': _id, date: _date, ...headers } = response.headers
  return { status: response.statusCode, headers, body: response.body }
}

const BACKENDS: Array<{ name: string, open: () => Promise<Storage> }> = [
  { name: 'SQLite', open: async () => openSqlite('sqlite::memory:') },
  { name: 'PostgreSQL', open: async () => await openPostgres(await freshPostgresDatabase()) }
]

for (const backend of BACKENDS) {
  describe(`GET /v1/pets and /v1/pets/{id} on ${backend.name}: the JSON as the database writes it`, () => {
    let storage: Storage
    let fromJson: TestApp
    let fromRows: TestApp
    let tokens: { json: string, rows: string }

    before(async () => {
      storage = await backend.open()
      for (let i = 0; i < 2 * NAMES.length + 5; i++) await storage.createPet(animal(i))
      const { listPetsJson, getPetJson, ...rowsOnly } = timedStorage(storage, () => {})
      assert.ok(listPetsJson !== undefined && getPetJson !== undefined, `${backend.name} writes pages and animals as JSON`)
      fromJson = await buildTestApp({}, { storage })
      fromRows = await buildTestApp({}, { storage: rowsOnly })
      tokens = { json: await fromJson.newKey('business'), rows: await fromRows.newKey('business') }
    })
    after(async () => {
      await fromJson.app.close()
      await fromRows.app.close()
      await storage.close()
    })

    /** Both apps, the same request; the answers compared; the next page's URL, if any. */
    async function both (url: string, status = 200): Promise<string | undefined> {
      const json = await fromJson.app.inject({ url, headers: bearer(tokens.json) })
      const rows = await fromRows.app.inject({ url, headers: bearer(tokens.rows) })
      assert.deepEqual(comparable(json), comparable(rows), url)
      assert.equal(json.statusCode, status, json.body)
      const next = /<[^>]*(\/pets\?[^>]*)>; rel="next"/.exec(String(json.headers.link))?.[1]
      return next === undefined ? undefined : `/v1${next}`
    }

    for (const filter of ['', '&status=available', '&status=pending', '&status=sold']) {
      for (const limit of [1, 2, 3, 7, 100]) {
        it(`When every page of limit=${limit}${filter} is followed, then each is the serializer's, byte for byte, headers included`, async () => {
          let url: string | undefined = `/v1/pets?limit=${limit}${filter}`
          let pages = 0
          while (url !== undefined) {
            url = await both(url)
            pages++
          }
          assert.ok(pages >= 1)
        })
      }
    }

    it('When each animal is fetched, twice, and an id that is not there, then each answer is the serializer\'s, headers included', async () => {
      for (let round = 0; round < 2; round++) {
        for (let id = 1; id <= 2 * NAMES.length + 5; id++) await both(`/v1/pets/${id}`)
        await both('/v1/pets/100000', 404)
      }
    })

    it('When no animal has the status asked for, then both answer the same empty array', async () => {
      const storage = await backend.open()
      const { listPetsJson: _json, getPetJson: _pet, ...rowsOnly } = timedStorage(storage, () => {})
      await storage.createPet(buildPetRecord({ name: 'Rex', categoryId: 1n, status: 'available' }))
      const a = await buildTestApp({}, { storage })
      const b = await buildTestApp({}, { storage: rowsOnly })
      try {
        const url = '/v1/pets?status=sold'
        const json = await a.app.inject({ url, headers: bearer(await a.newKey('business')) })
        const rows = await b.app.inject({ url, headers: bearer(await b.newKey('business')) })
        assert.equal(json.body, '[]')
        assert.deepEqual(comparable(json), comparable(rows))
      } finally {
        await a.app.close()
        await b.app.close()
        await storage.close()
      }
    })
  })
}
