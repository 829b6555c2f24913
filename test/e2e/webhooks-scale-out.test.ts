// Two instances on one PostgreSQL database, each with two workers where this
// Node.js can share a port (docs/WEBHOOKS.md: How delivery works): every
// instance's dispatcher fans out and takes work with SKIP LOCKED, so in
// normal operation each of 10,000 events reaches the receiver once,
// whichever instance or worker wrote it and whichever instance sent it.
// Duplicates are counted and reported; none is expected without faults, and
// each one must follow an attempt the service logged as failed.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sharesPorts } from '../../src/config.js'
import { addPet, createUnlimitedKey } from '../support/load.js'
import { bearer } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil, startServers, type ServerProcess } from '../support/process.js'
import { WebhookReceiver, verify } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'adm-e2e-4Hs8Kq2Wn6Zx1Lp9Vr3Tb7Mc5Jd0Fy'
const ANIMALS = 10_000
/** Clients at once, spread over both instances. */
const CLIENTS = 32
const DELIVERED_WITHIN_MS = 120_000

describe('webhook deliveries of two instances on one PostgreSQL database', { timeout: 300_000 }, () => {
  const servers: ServerProcess[] = []
  let receiver: WebhookReceiver | undefined
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await receiver?.close()
  })

  it(`When both instances add ${ANIMALS} animals and both dispatch, then every event arrives, none twice`, async () => {
    // Arrange
    const env = {
      DATABASE_URL: await freshPostgresDatabase(),
      ADMIN_PORT: '0',
      ADMIN_TOKEN,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...(sharesPorts(process.versions.node) ? { WORKERS: '2' } : {})
    }
    const { token } = await createUnlimitedKey(env, 'load')
    receiver = await new WebhookReceiver().listen()
    servers.push(...await startServers(2, env, 30_000))
    const adminBase = await adminApi(servers[0] as ServerProcess)
    const made = await fetch(`${adminBase}/webhooks`, {
      method: 'POST',
      headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: ['pet.created'] })
    })
    assert.equal(made.status, 201)
    const { secret } = await made.json() as { secret: string }

    // Act: clients on both instances, as behind a load balancer.
    const acknowledged = new Set<string>()
    let next = 0
    await Promise.all(Array.from({ length: CLIENTS }, async (_, client) => {
      const origin = (servers[client % servers.length] as ServerProcess).origin
      while (next < ANIMALS) {
        next++
        const added = await addPet(origin, token, `pet-${next}`)
        if (added.status === 201) acknowledged.add(String((JSON.parse(added.text) as { id: number }).id))
      }
    }))
    const up = receiver
    await pollUntil(async () => up.ids().size >= acknowledged.size ? true : undefined, { ms: DELIVERED_WITHIN_MS, every: 250, what: `${acknowledged.size} distinct deliveries` })
    // Anything sent twice would arrive meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 1000))

    // Assert
    const delivered = new Map<string, string>()
    for (const delivery of up.received) {
      const payload = verify(secret, delivery)
      assert.equal(payload.type, 'pet.created')
      delivered.set(String(delivery.headers['webhook-id']), String(payload.data.id))
    }
    const duplicates = up.received.length - delivered.size
    // A delivery is sent again only after an attempt failed (on a loaded machine, an answer later than the attempt's timeout): each is logged.
    const failedAttempts = servers.reduce((sum, server) => sum + (server.stdout.match(/webhooks: a delivery failed/g)?.length ?? 0), 0)
    console.log(`two instances on PostgreSQL (${env.WORKERS ?? '1'} worker(s) each): ${acknowledged.size} acknowledged, ${delivered.size} webhook-ids in ${up.received.length} deliveries, ${duplicates} duplicates, ${failedAttempts} failed attempts`)
    assert.equal(acknowledged.size, ANIMALS)
    assert.ok(duplicates <= failedAttempts, `${duplicates} duplicates, but ${failedAttempts} failed attempts to explain them`)
    assert.deepEqual([...new Set(delivered.values())].sort(), [...acknowledged].sort())
  })
})

async function adminApi (server: ServerProcess): Promise<string> {
  await server.waitForStdout((stdout) => /"adminApi":"http:\/\/[^"]+"/.test(stdout), 5_000, 'the admin API\'s address')
  return /"adminApi":"(http:\/\/[^"]+)"/.exec(server.stdout)?.[1] ?? ''
}
