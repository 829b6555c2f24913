import { it } from 'node:test'
import assert from 'node:assert/strict'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { rateLimitStoreContract } from './store-contract.js'

rateLimitStoreContract('memory', async () => new MemoryStore())

it('When every window of a subject has ended, then the sweep forgets it', async () => {
  const store = new MemoryStore()
  const t0 = CLOCK_START
  await store.hit({ subject: 'addr:1', windows: [{ window: 'minute', limit: 1 }], ban: undefined }, t0)
  store.sweep(t0 + 60_000)
  const again = await store.hit({ subject: 'addr:1', windows: [{ window: 'minute', limit: 1 }], ban: undefined }, t0)
  await store.close()
  assert.equal(again.outcome, 'allowed', 'the old count was forgotten')
})
