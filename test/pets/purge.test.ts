import { describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { purgeExpiredIdempotencyKeys } from '../../src/pets/purge.js'
import { buildKeyRecord, buildPetRecord, CLOCK_START } from '../support/fixtures.js'

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

describe('the hourly purge of idempotency keys', () => {
  it('When an hour passes, then keys older than 24 hours are forgotten and newer ones kept; once stopped, it purges no more', async (t) => {
    // Arrange
    t.mock.timers.enable({ apis: ['setInterval'] })
    const storage = openSqlite('sqlite::memory:')
    const key = await storage.createApiKey(buildKeyRecord({ createdAt: 0 }))
    const pet = buildPetRecord()
    const old = { apiKeyId: key.id, key: 'old', requestHash: 'a', createdAt: CLOCK_START - DAY - 1, liveAfter: 0 }
    const fresh = { apiKeyId: key.id, key: 'fresh', requestHash: 'b', createdAt: CLOCK_START - HOUR, liveAfter: 0 }
    await storage.createPetOnce(pet, old)
    await storage.createPetOnce(pet, fresh)
    const purged: number[] = []
    const log = { info: mock.fn((fields: { count?: number }) => { purged.push(fields.count ?? 0) }), warn: mock.fn() }
    let runs = 0
    const purge = storage.purgeIdempotentRequests.bind(storage)
    storage.purgeIdempotentRequests = async (before) => { runs++; return await purge(before) }
    const stop = purgeExpiredIdempotencyKeys(storage, () => CLOCK_START, log)

    // Act
    t.mock.timers.tick(HOUR)
    await new Promise((resolve) => setImmediate(resolve))
    stop()
    t.mock.timers.tick(HOUR)
    await new Promise((resolve) => setImmediate(resolve))

    // Assert: the old key is free again (a new animal), the fresh one still replays.
    assert.equal(runs, 1, 'the purge ran again after it was stopped, or not at all')
    assert.deepEqual(purged, [1])
    assert.equal((await storage.createPetOnce(pet, { ...old, createdAt: CLOCK_START })).created, true)
    assert.equal((await storage.createPetOnce(pet, { ...fresh, createdAt: CLOCK_START })).created, false)
    assert.equal(log.warn.mock.callCount(), 0)
    await storage.close()
  })
})
