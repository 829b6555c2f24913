// Two instances on one PostgreSQL database share the deliveries
// (docs/WEBHOOKS.md: How delivery works): each dispatcher fans out and takes
// work with SKIP LOCKED, so in normal operation every event reaches the
// receiver once, whichever instance wrote it and whichever sent it.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { openPostgres, type PostgresStorage } from '../../src/db/postgres/storage.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook } from '../../src/webhooks/manage.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil } from '../support/process.js'
import { WebhookReceiver, verify } from '../support/webhook-receiver.js'

const ANIMALS = 2_000

describe('webhook deliveries of two instances on one PostgreSQL database', { timeout: 120_000 }, () => {
  const storages: PostgresStorage[] = []
  const dispatchers: Dispatcher[] = []
  let receiver: WebhookReceiver | undefined
  after(async () => {
    await Promise.all(dispatchers.map(async (dispatcher) => await dispatcher.stop()))
    await Promise.all(storages.map(async (storage) => await storage.close()))
    await receiver?.close()
  })

  it('When both instances add animals and both dispatch, then every event arrives, none twice', async () => {
    // Arrange
    const url = await freshPostgresDatabase()
    storages.push(await openPostgres(url, { poolSize: 4 }), await openPostgres(url, { poolSize: 4 }))
    receiver = await new WebhookReceiver().listen()
    const { secret } = await createWebhook(storages[0] as PostgresStorage, { url: receiver.url, events: ['pet.created'], description: undefined, now: Date.now() }, { allowPrivate: true })
    for (const storage of storages) {
      const dispatcher = new Dispatcher({ storage, logger: pino({ level: 'warn' }), allowPrivate: true })
      dispatcher.start()
      dispatchers.push(dispatcher)
    }

    // Act: each instance adds half, in batches as clients would.
    const ids: bigint[] = []
    for (let start = 0; start < ANIMALS; start += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, async (_, i) =>
        await (storages[i % 2] as PostgresStorage).createPet({ name: `pet-${start + i}`, categoryId: 1n, status: 'available' })))
      ids.push(...batch.map((pet) => pet.id))
    }
    const up = receiver
    await pollUntil(async () => up.ids().size >= ANIMALS ? true : undefined, { ms: 60_000, every: 100, what: `${ANIMALS} distinct deliveries` })
    await new Promise((resolve) => setTimeout(resolve, 1000))

    // Assert
    const petIds = up.received.map((delivery) => String(verify(secret, delivery).data.id))
    const duplicates = up.received.length - up.ids().size
    console.log(`two instances on PostgreSQL: ${ANIMALS} events, ${up.received.length} deliveries, ${duplicates} duplicates`)
    assert.equal(duplicates, 0)
    assert.deepEqual(petIds.sort(), ids.map(String).sort())
  })
})
