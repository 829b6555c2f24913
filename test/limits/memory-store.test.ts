import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MemoryStore } from '../../src/limits/memory-store.js'
import type { BanPolicy, Decision, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { rateLimitStoreContract } from './store-contract.js'

rateLimitStoreContract('memory', async () => new MemoryStore())

const T0 = CLOCK_START
const ONE_A_MINUTE: WindowLimit[] = [{ window: 'minute', limit: 1 }]

async function hit (store: MemoryStore, subject: string, now = T0, windows = ONE_A_MINUTE, ban?: BanPolicy): Promise<Decision['outcome']> {
  return (await store.hit({ subject, windows, ban }, now)).outcome
}

it('When every window of a subject has ended, then the sweep forgets it', async () => {
  const store = new MemoryStore()
  const t0 = CLOCK_START
  await store.hit({ subject: 'addr:1', windows: [{ window: 'minute', limit: 1 }], ban: undefined }, t0)
  store.sweep(t0 + 60_000)
  const again = await store.hit({ subject: 'addr:1', windows: [{ window: 'minute', limit: 1 }], ban: undefined }, t0)
  await store.close()
  assert.equal(again.outcome, 'allowed', 'the old count was forgotten')
})

describe('the in-process store\'s cap on subjects', () => {
  it('When more subjects arrive than the cap, then it holds exactly the cap', async () => {
    // Arrange
    const store = new MemoryStore(Date.now, { maxSubjects: 3 })

    // Act
    for (let i = 0; i < 10; i++) await hit(store, `addr:10.0.0.${i}`)
    await store.close()

    // Assert
    assert.equal(store.size, 3)
  })

  it('When the store is full, then the least recently used subject goes and a recently used one stays', async () => {
    // Arrange: three subjects, each at its limit; then `a` is seen again.
    const store = new MemoryStore(Date.now, { maxSubjects: 3 })
    for (const subject of ['addr:a', 'addr:b', 'addr:c']) await hit(store, subject)
    await hit(store, 'addr:a', T0 + 1)

    // Act
    await hit(store, 'addr:d', T0 + 2)

    // Assert: `a` still counts; `b`, the least recently used, starts again.
    const a = await hit(store, 'addr:a', T0 + 3)
    const b = await hit(store, 'addr:b', T0 + 4)
    await store.close()
    assert.equal(a, 'limited', 'the recently used subject kept its count')
    assert.equal(b, 'allowed', 'the least recently used subject was forgotten')
  })

  it('When the store is full and some subjects\' windows have ended, then those go before a subject that still counts', async () => {
    // Arrange: a key used up for the day, then an address whose minute ends first.
    const store = new MemoryStore(Date.now, { maxSubjects: 2 })
    const day: WindowLimit[] = [{ window: 'minute', limit: 10 }, { window: 'day', limit: 1 }]
    await hit(store, 'key:1', T0, day)
    await hit(store, 'addr:old', T0 + 1)

    // Act: a new subject in the next minute.
    await hit(store, 'addr:new', T0 + 60_000)

    // Assert
    assert.equal(await hit(store, 'key:1', T0 + 60_001, day), 'limited', 'the key kept its day count')
    await store.close()
  })

  it('When a flood of new subjects passes a banned key, then the ban stays', async () => {
    // Arrange: a key banned by its first refusal.
    const store = new MemoryStore(Date.now, { maxSubjects: 2 })
    const ban: BanPolicy = { threshold: 1, seconds: 900 }
    await hit(store, 'key:1', T0, ONE_A_MINUTE, ban)
    await hit(store, 'key:1', T0 + 1, ONE_A_MINUTE, ban)

    // Act
    for (let i = 0; i < 10; i++) await hit(store, `addr:10.0.0.${i}`, T0 + 2)

    // Assert
    assert.equal(await hit(store, 'key:1', T0 + 3, ONE_A_MINUTE, ban), 'banned')
    assert.equal(store.size, 2)
    await store.close()
  })

  it('When every subject is banned and a new one arrives, then the cap still holds and the oldest ban goes', async () => {
    // Arrange
    const store = new MemoryStore(Date.now, { maxSubjects: 2 })
    const ban: BanPolicy = { threshold: 1, seconds: 900 }
    for (const subject of ['key:1', 'key:2']) {
      await hit(store, subject, T0, ONE_A_MINUTE, ban)
      await hit(store, subject, T0 + 1, ONE_A_MINUTE, ban)
    }

    // Act
    await hit(store, 'key:3', T0 + 2)

    // Assert
    assert.equal(store.size, 2)
    assert.equal(await hit(store, 'key:2', T0 + 3, ONE_A_MINUTE, ban), 'banned')
    assert.equal(await hit(store, 'key:1', T0 + 4, ONE_A_MINUTE, ban), 'allowed')
    await store.close()
  })

  for (const maxSubjects of [0, -1, 1.5, Number.NaN]) {
    it(`When maxSubjects is ${maxSubjects}, then the store refuses to start`, () => {
      assert.throws(() => new MemoryStore(Date.now, { maxSubjects }), RangeError)
    })
  }
})
