import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { MemoryStore } from '../../src/limits/memory-store.js'
import { createSharedLimits, sharedLimitsCapacity, SharedMemoryStore } from '../../src/limits/shared-memory-store.js'
import type { BanPolicy, Decision, HitRequest, WindowLimit } from '../../src/limits/store.js'
import { CLOCK_START } from '../support/fixtures.js'
import { inProcessStoreSuite } from './in-process-store-suite.js'
import { rateLimitStoreContract } from './store-contract.js'

// One table for the whole suite, as one process has: each test's subjects are its own.
const table = createSharedLimits()
rateLimitStoreContract('shared-memory', async () => new SharedMemoryStore(table))
// Below 64 subjects a table is one shard: its eviction order is the whole store's, as in the in-process store.
inProcessStoreSuite('shared-memory', (clock, maxSubjects) => new SharedMemoryStore(maxSubjects === undefined ? table : createSharedLimits({ maxSubjects }), clock))

const T0 = CLOCK_START
const ONE_A_MINUTE: WindowLimit[] = [{ window: 'minute', limit: 1 }]

/** A store on a clock the test sets: each hit happens at its `now`, and the store's clock reads the same. */
function storeOnTestClock (maxSubjects: number): { store: SharedMemoryStore, hit: (subject: string, now?: number, windows?: WindowLimit[], ban?: BanPolicy) => Promise<Decision['outcome']> } {
  let clock = T0
  // Below 64 subjects the table is one shard: its eviction order is the whole store's, as in the in-process store.
  const store = new SharedMemoryStore(createSharedLimits({ maxSubjects }), () => clock)
  const hit = async (subject: string, now = T0, windows = ONE_A_MINUTE, ban?: BanPolicy): Promise<Decision['outcome']> => {
    clock = now
    return (await store.hit({ subject, windows, ban }, now)).outcome
  }
  return { store, hit }
}

describe('the shared-memory store\'s table', () => {
  it('When 80,000 addresses in a row are each at their limit, then the default table still counts every one: no shard has overflowed', async () => {
    // Arrange: a fresh table (its seed is drawn anew). With 64 slots a shard, the chance that one overflows is below 1 in 6 million.
    const store = new SharedMemoryStore(createSharedLimits(), () => T0)
    const subjects = Array.from({ length: 80_000 }, (_, i) => `addr:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`)
    for (const subject of subjects) await store.hit({ subject, windows: ONE_A_MINUTE, ban: undefined }, T0)

    // Act
    let forgotten = 0
    for (const subject of subjects) if ((await store.hit({ subject, windows: ONE_A_MINUTE, ban: undefined }, T0 + 1)).outcome === 'allowed') forgotten++

    // Assert
    assert.equal(forgotten, 0)
  })

  it('When no cap is given, then the table holds 200,000 subjects, twice the in-process store\'s, in shards of 64', () => {
    assert.equal(sharedLimitsCapacity(table), 200_000)
    assert.equal(table.buffer.byteLength, 64 + 3125 * 8256)
  })
})

describe('the shared-memory store\'s subjects', () => {
  it('When two subjects too long to keep whole differ only at their end, then each is counted apart, by its digest', async () => {
    // Arrange
    const { store, hit } = storeOnTestClock(4)
    const long = `key:${'x'.repeat(80)}`

    // Act
    const first = [await hit(`${long}-1`), await hit(`${long}-1`)]
    const other = await hit(`${long}-2`)
    await store.close()

    // Assert
    assert.deepEqual(first, ['allowed', 'limited'])
    assert.equal(other, 'allowed')
  })

  it('When a subject is not ASCII or is as long as can be kept, then it is counted as itself', async () => {
    const { store, hit } = storeOnTestClock(4)
    const subjects = ['addr:bücher', `key:${'é'.repeat(22)}`, `key:${'y'.repeat(44)}`, `key:${'y'.repeat(45)}`]

    for (const subject of subjects) await hit(subject)
    const again = []
    for (const subject of subjects) again.push(await hit(subject))
    await store.close()

    assert.deepEqual(again, ['limited', 'limited', 'limited', 'limited'])
  })

  it('When two stores wrap one table, then a subject charged through one is counted by the other', async () => {
    const table = createSharedLimits({ maxSubjects: 100 })
    const one = new SharedMemoryStore(table, () => T0)
    const other = new SharedMemoryStore(table, () => T0)
    const r: HitRequest = { subject: 'key:7', windows: ONE_A_MINUTE, ban: undefined }

    const first = await one.hit(r, T0)
    const second = await other.hit(r, T0)

    assert.deepEqual([first.outcome, second.outcome], ['allowed', 'limited'])
  })
})

describe('the shared-memory store against the in-process store', () => {
  const SUBJECTS = ['key:1', 'key:2', 'addr:10.0.0.1', 'addr:10.0.0.2', 'addr:2001:db8:0:1::/64', `key:${'z'.repeat(70)}`]
  const WINDOWS: WindowLimit[][] = [
    [{ window: 'minute', limit: 1 }, { window: 'day', limit: 3 }],
    [{ window: 'minute', limit: 2 }, { window: 'day', limit: 2 }],
    [{ window: 'minute', limit: 2 }],
    [{ window: 'day', limit: 4 }]
  ]
  const hitsWith = (steps: number[]) => fc.array(fc.record({
    subject: fc.constantFrom(...SUBJECTS),
    step: fc.constantFrom(...steps),
    windows: fc.constantFrom(...WINDOWS),
    charge: fc.constantFrom(true, true, true, false)
  }), { maxLength: 100 })
  type Hits = Array<{ subject: string, step: number, windows: WindowLimit[], charge: boolean }>

  /** Plays the hits on both stores, on one clock the test moves, and compares every decision. */
  async function playOnBoth (maxSubjects: number, ban: BanPolicy | undefined, start: number, hits: Hits): Promise<void> {
    let now = start
    const memory = new MemoryStore(() => now, { maxSubjects })
    const shared = new SharedMemoryStore(createSharedLimits({ maxSubjects }), () => now)
    try {
      for (const [i, { step, ...request }] of hits.entries()) {
        now += step
        assert.deepEqual(await shared.hit({ ...request, ban }, now), await memory.hit({ ...request, ban }, now), `hit ${i}`)
      }
    } finally {
      await memory.close()
    }
  }

  it('When any sequence of hits and looks, across minutes, days and bans, is played on both with room for every subject, then every decision is the same', async () => {
    // A policy a run, as the service has: mostly a ban, often one earned at the first or second refusal; steps that cross a millisecond, a ban's end, a minute and a day.
    const ban = fc.option(fc.record({ threshold: fc.integer({ min: 1, max: 3 }), seconds: fc.constantFrom(1, 5, 60, 900) }), { nil: undefined, freq: 4 })
    const hits = hitsWith([0, 0, 0, 1, 999, 5_000, 30_000, 60_000, 3_600_000, 86_400_000])

    await fc.assert(fc.asyncProperty(ban, hits, async (ban, hits) => { await playOnBoth(SUBJECTS.length, ban, T0, hits) }), { numRuns: 1000 })
  })

  it('When any sequence of hits and looks, bans among them, is played on both with a cap that evicts, then every decision is the same', async () => {
    // Hits on a minute's first millisecond and at a ban's very end among them: there, both must let go of the subject that has just stopped counting.
    const ban = fc.option(fc.record({ threshold: fc.integer({ min: 1, max: 3 }), seconds: fc.constantFrom(1, 5, 60, 900) }), { nil: undefined, freq: 4 })
    const hits = hitsWith([0, 0, 0, 1, 999, 5_000, 30_000, 60_000, 3_600_000, 86_400_000])

    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: SUBJECTS.length - 1 }), ban, hits, async (maxSubjects, ban, hits) => { await playOnBoth(maxSubjects, ban, T0, hits) }), { numRuns: 1000 })
  })
})
