// Events of time and use (docs/WEBHOOKS.md: Quota and expiry), on both
// configurations: a key's daily quota at 80 % and 100 %, and its expiry a
// week ahead and when it comes, each reach a real receiver once, verified
// with the `standardwebhooks` library, however many requests, looks or
// instances see the moment.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { openPostgres } from '../../src/db/postgres/storage.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import type { EventType } from '../../src/domain.js'
import { announceExpiries } from '../../src/keys/announcements.js'
import { issueKey, revokeKey, updateKey } from '../../src/keys/manage.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { createWebhook } from '../../src/webhooks/manage.js'
import { CONFIGURATIONS, buildTestApp, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { pollUntil } from '../support/process.js'
import { openTestStore } from '../support/redis.js'
import { WebhookReceiver, verify } from '../support/webhook-receiver.js'

const DAY_MS = 86_400_000

class Clock {
  ms = Date.now()
  now = (): number => this.ms
}

/** A receiver, an endpoint to it for `events`, and a dispatcher that delivers from `storage` on `clock`, looking for expiries each minute. */
async function deliverTo (storage: Storage, events: EventType[], clock: Clock, closing: Array<() => Promise<void>>): Promise<{ receiver: WebhookReceiver, secret: string }> {
  const receiver = await new WebhookReceiver().listen()
  const { secret } = await createWebhook(storage, { url: receiver.url, events, description: undefined, now: clock.now() }, { allowPrivate: true })
  const dispatcher = new Dispatcher({
    storage,
    logger: pino({ level: 'silent' }),
    allowPrivate: true,
    now: clock.now,
    chores: [{ name: 'key expiries', everyMs: 60_000, run: async (now) => await announceExpiries(storage, now) }]
  })
  dispatcher.start()
  closing.unshift(async () => { await dispatcher.stop(); await receiver.close() })
  return { receiver, secret }
}

const arrived = async (receiver: WebhookReceiver, count: number, what: string): Promise<void> => {
  await pollUntil(async () => receiver.received.length >= count ? true : undefined, { ms: 10_000, every: 50, what })
}

/** Long enough for a write that should not happen, or a delivery that should not come, to show. */
const settle = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 700)) }

for (const configuration of CONFIGURATIONS) {
  describe(`quota and expiry events (${configuration.name})`, () => {
    const closing: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const close of closing.splice(0)) await close()
    })

    /** Two instances of the service on one database and one rate-limit store. */
    async function twoInstances (): Promise<[TestApp, TestApp]> {
      if (configuration.backend === 'sqlite') {
        const first = await buildTestApp()
        const second = await buildTestApp({}, { storage: first.storage, limiter: first.limiter })
        closing.push(async () => { await second.app.close(); await first.close() })
        return [first, second]
      }
      const url = await freshPostgresDatabase()
      const namespace = randomUUID()
      const apps: TestApp[] = []
      for (let i = 0; i < 2; i++) {
        apps.push(await buildTestApp({}, {
          storage: await openPostgres(url, { poolSize: 4 }),
          limiter: await openTestStore('single', { namespace })
        }))
      }
      closing.push(async () => { for (const t of apps) await t.close() })
      return apps as [TestApp, TestApp]
    }

    it('When two instances count a key past 80 % and 100 % of its daily limit together, then quota.warning and quota.exhausted each arrive once, with the key, the day, the limit and the use', async () => {
      // Arrange
      const [first, second] = await twoInstances()
      const { receiver, secret } = await deliverTo(first.storage, ['quota.warning', 'quota.exhausted'], new Clock(), closing)
      const token = await first.newKey('pro', { perMinute: 1000, perDay: 10 })
      const other = await first.newKey('pro', { perMinute: 1000, perDay: 10 })

      let writes = 0
      for (const storage of new Set([first.storage, second.storage])) {
        const announceOnce = storage.announceOnce.bind(storage)
        storage.announceOnce = async (...args) => { writes++; return await announceOnce(...args) }
      }

      // Act: 7 requests cross nothing; then both instances at once, past the limit; then more, refused.
      for (let i = 0; i < 7; i++) await first.app.inject({ url: '/v1/pets', headers: bearer(token) })
      await settle()
      const writesBelow = writes
      await Promise.all(Array.from({ length: 8 }, async (_, i) => await (i % 2 === 0 ? first : second).app.inject({ url: '/v1/pets', headers: bearer(token) })))
      for (let i = 0; i < 7; i++) await second.app.inject({ url: '/v1/pets', headers: bearer(other) })
      await settle()
      for (let i = 0; i < 3; i++) await first.app.inject({ url: '/v1/pets', headers: bearer(token) })
      await arrived(receiver, 2, 'the two quota events')
      await settle()

      // Assert: nothing written below 80 %; past it, at most once per instance and level, not once per request.
      assert.equal(writesBelow, 0)
      assert.ok(writes >= 2 && writes <= 4, `${writes} writes`)
      const payloads = receiver.received.map((delivery) => verify(secret, delivery))
      assert.deepEqual(payloads.map((p) => p.type).sort(), ['quota.exhausted', 'quota.warning'])
      const day = new Date(first.clock.now()).toISOString().slice(0, 10)
      const warning = payloads.find((p) => p.type === 'quota.warning')
      const exhausted = payloads.find((p) => p.type === 'quota.exhausted')
      // The use as the announcing instance saw it: the burst may have passed 8 before that instance wrote.
      const used = Number(warning?.data.used)
      assert.deepEqual({ ...warning?.data, key: undefined, used: undefined }, { key: undefined, day, limit: 10, used: undefined })
      assert.ok(used >= 8 && used <= 10, `quota.warning said ${used} used`)
      assert.deepEqual({ ...exhausted?.data, key: undefined }, { key: undefined, day, limit: 10, used: 10 })
      const key = exhausted?.data.key as Record<string, unknown>
      assert.equal(key.perDay, 10)
      assert.equal(key.plan, 'pro')
      assert.ok(!receiver.received.some((delivery) => delivery.body.includes(token)), 'a token in an event')
    })

    it('When a key expires in 6 days, another in a minute, one in 8 days and a revoked one in 6 days, then each expiry is announced once as the clock passes it, and again after it is changed', async () => {
      // Arrange
      const storage = configuration.backend === 'sqlite' ? await openSqlite('sqlite::memory:') : await openPostgres(await freshPostgresDatabase(), { poolSize: 4 })
      closing.push(async () => { await storage.close() })
      const clock = new Clock()
      const issue = async (name: string, inMs: number): Promise<number> => (await issueKey(storage, {
        plan: 'free', name, perMinute: undefined, perDay: undefined, environment: 'production', expiresAt: clock.now() + inMs, now: clock.now()
      })).id
      const soon = await issue('six days', 6 * DAY_MS)
      const now = await issue('a minute', 60_000)
      await issue('eight days', 8 * DAY_MS)
      await revokeKey(storage, await issue('revoked', 6 * DAY_MS), clock.now())
      const { receiver, secret } = await deliverTo(storage, ['key.expiring', 'key.expired'], clock, closing)
      const seen = (): Array<[string, unknown]> => receiver.received.map((delivery) => verify(secret, delivery)).map((p) => [p.type, p.data.id])

      // Act and assert: the first look, then one after the minute key's expiry, then one with nothing new.
      await arrived(receiver, 2, 'two key.expiring')
      assert.deepEqual(seen().sort(), [['key.expiring', soon], ['key.expiring', now]].sort())
      clock.ms += 61_000
      await arrived(receiver, 3, 'key.expired')
      assert.deepEqual(seen()[2], ['key.expired', now])
      const expired = verify(secret, receiver.received[2] as NonNullable<typeof receiver.received[number]>)
      assert.equal(expired.data.expiresAt, new Date(clock.now() - 1000).toISOString())
      clock.ms += 61_000
      await settle()
      assert.equal(receiver.received.length, 3)

      // A new expiry is a new announcement; looks made again, and at once, add none.
      await updateKey(storage, soon, { expiresAt: clock.now() + 5 * DAY_MS }, clock.now())
      const again = await Promise.all([announceExpiries(storage, clock.now()), announceExpiries(storage, clock.now())])
      assert.equal(again[0] + again[1], 1)
      assert.equal(await announceExpiries(storage, clock.now()), 0)
      await arrived(receiver, 4, 'key.expiring again')
      assert.deepEqual(seen()[3], ['key.expiring', soon])
      await settle()
      assert.equal(receiver.ids().size, 4)
    })
  })
}
