// Nothing announced is lost (docs/WEBHOOKS.md): every animal acknowledged
// with a 201 has its pet.created delivered, even when the receiver is down
// while they are added and the service is killed with SIGKILL before it
// delivered them; after a restart each arrives, counted by webhook-id.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { addPet, createUnlimitedKey } from '../support/load.js'
import { freePort } from '../support/ports.js'
import { bearer } from '../support/fixtures.js'
import { makeTempDir, pollUntil, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'
import { WebhookReceiver, verify } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'adm-e2e-9Kx3Lq7Wp2Zr5Ty8Vb4Nm6Hc1Jd0Fg'
const ANIMALS = 1_000
const CLIENTS = 20
/** Failed first attempts come again within 30 s, and leases of deliveries in flight at the kill end within 60 s. */
const DELIVERED_WITHIN_MS = 100_000

describe('webhooks across a SIGKILL, on SQLite', { timeout: 180_000 }, () => {
  const dir = makeTempDir()
  const servers: ServerProcess[] = []
  let receiver: WebhookReceiver | undefined
  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    await receiver?.close()
    removeTempDir(dir)
  })

  it('When the receiver is down while animals are added and the service is killed, then after a restart each 201 has exactly one pet.created, verified', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE: 'true' }
    const { token } = await createUnlimitedKey(env, 'load')
    const receiverPort = await freePort()
    const first = await startServer(env)
    servers.push(first)
    await first.waitForStdout((stdout) => /"adminApi":"http:\/\/[^"]+"/.test(stdout), 5_000, 'the admin API\'s address')
    const adminBase = /"adminApi":"(http:\/\/[^"]+)"/.exec(first.stdout)?.[1] ?? ''
    const made = await fetch(`${adminBase}/webhooks`, {
      method: 'POST',
      headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hooks`, events: ['pet.created'] })
    })
    assert.equal(made.status, 201)
    const { secret } = await made.json() as { secret: string }

    // Act: the receiver is down while the animals are added; then the service is killed.
    const acknowledged = new Set<string>()
    let next = 0
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (next < ANIMALS) {
        next++
        const added = await addPet(first.origin, token, `pet-${next}`)
        if (added.status === 201) acknowledged.add(String((JSON.parse(added.text) as { id: number }).id))
      }
    }))
    first.signal('SIGKILL')
    await first.waitForExit(10_000)
    receiver = await new WebhookReceiver().listen(receiverPort)
    servers.push(await startServer(env))
    const up = receiver
    await pollUntil(async () => up.ids().size >= acknowledged.size ? true : undefined, { ms: DELIVERED_WITHIN_MS, every: 250, what: `${acknowledged.size} distinct deliveries` })
    // Anything sent twice would arrive meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 1000))

    // Assert
    assert.equal(acknowledged.size, ANIMALS)
    const delivered = new Map<string, string>()
    for (const delivery of up.received) {
      const payload = verify(secret, delivery)
      assert.equal(payload.type, 'pet.created')
      delivered.set(String(delivery.headers['webhook-id']), String(payload.data.id))
    }
    assert.equal(delivered.size, ANIMALS, 'one webhook-id per animal')
    assert.deepEqual([...new Set(delivered.values())].sort(), [...acknowledged].sort())
    console.log(`webhooks across a SIGKILL: ${acknowledged.size} acknowledged, ${delivered.size} webhook-ids received in ${up.received.length} deliveries`)
  })
})
