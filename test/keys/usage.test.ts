// Usage counting (docs/OPERATING.md: Usage), on its own: a fake
// storage records each write, and the test moves the clock.
import { afterEach, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import type { KeyUsage } from '../../src/db/storage.js'
import { MAX_USAGE_ENTRIES, createUsageCounter, type UsageCounter, type UsageCounterOptions } from '../../src/keys/usage.js'

const DAY_MS = 86_400_000
/** A UTC midnight: the day before it is `DAY - 1`. */
const MIDNIGHT = Date.parse('2027-03-11T00:00:00Z')
const DAY = MIDNIGHT / DAY_MS

interface Write { rows: KeyUsage[], lastUsed: Array<[number, number]> }

/** A storage that keeps a copy of every write, and fails the writes it is told to. */
class FakeStorage {
  readonly writes: Write[] = []
  /** Calls to addUsage, failed ones included. */
  calls = 0
  failing = false
  /** While set, writes wait for it: a slow database. */
  held: Promise<void> | undefined

  addUsage = async (usage: readonly KeyUsage[], lastUsed: ReadonlyMap<number, number>): Promise<void> => {
    this.calls++
    // Copied at the call: what the counter hands over must not change afterwards.
    const write = { rows: usage.map((row) => ({ ...row })), lastUsed: [...lastUsed.entries()] }
    await (this.held ?? Promise.resolve())
    if (this.failing) throw new Error('the database is away')
    this.writes.push(write)
  }
}

function counter (overrides: Partial<UsageCounterOptions> = {}): { usage: UsageCounter, storage: FakeStorage, clock: { ms: number }, errors: unknown[], dropped: number[] } {
  const storage = new FakeStorage()
  const clock = { ms: MIDNIGHT - 60_000 }
  const errors: unknown[] = []
  const dropped: number[] = []
  const usage = createUsageCounter({
    storage,
    now: () => clock.ms,
    onError: (error) => { errors.push(error) },
    onDropped: (count) => { dropped.push(count) },
    ...overrides
  })
  return { usage, storage, clock, errors, dropped }
}

const key = (id: number): { id: number, plan: 'free' } => ({ id, plan: 'free' })

describe('usage counting', () => {
  afterEach(() => { mock.timers.reset() })

  it('When a key sends just before and just after UTC midnight, then its requests land on two days', async () => {
    // Arrange
    const { usage, storage, clock } = counter()

    // Act
    clock.ms = MIDNIGHT - 1
    usage.count(key(1), 'admitted')
    usage.count(key(1), 'refused')
    clock.ms = MIDNIGHT
    usage.count(key(1), 'admitted')
    await usage.flush()

    // Assert
    assert.deepEqual(storage.writes.map((w) => w.rows), [[
      { keyId: 1, day: DAY - 1, admitted: 1, refused: 1 },
      { keyId: 1, day: DAY, admitted: 1, refused: 0 }
    ]])
  })

  it('When several keys are admitted and refused, then each key and day is counted apart, and each request is told once for metrics', async () => {
    // Arrange
    const told: string[] = []
    const { usage, storage } = counter({ onCounted: (plan, outcome) => { told.push(`${plan} ${outcome}`) } })

    // Act
    for (let i = 0; i < 3; i++) usage.count(key(1), 'admitted')
    for (let i = 0; i < 2; i++) usage.count(key(1), 'refused')
    usage.count({ id: 2, plan: 'pro' }, 'refused')
    await usage.flush()

    // Assert
    assert.deepEqual(storage.writes[0]?.rows, [
      { keyId: 1, day: DAY - 1, admitted: 3, refused: 2 },
      { keyId: 2, day: DAY - 1, admitted: 0, refused: 1 }
    ])
    assert.deepEqual(told, ['free admitted', 'free admitted', 'free admitted', 'free refused', 'free refused', 'pro refused'])
  })

  it('When requests are admitted and refused at various times, then a key\'s last use is its latest admitted request, and never moves back', async () => {
    // Arrange
    const { usage, storage, clock } = counter()

    // Act
    clock.ms = 5_000
    usage.count(key(1), 'admitted')
    clock.ms = 9_000
    usage.count(key(1), 'refused')
    usage.count(key(2), 'refused')
    clock.ms = 4_000 // another request, timed earlier (the clock stepped back)
    usage.count(key(1), 'admitted')
    await usage.flush()

    // Assert
    assert.deepEqual(storage.writes[0]?.lastUsed, [[1, 5_000]], 'a refusal is no use, and an earlier time does not replace a later one')
  })

  it('When keys are counted in any order, then one flush is one write, its rows in (key, day) order, and a flush with nothing new writes nothing', async () => {
    // Arrange
    const { usage, storage, clock } = counter()
    clock.ms = MIDNIGHT
    usage.count(key(3), 'admitted')
    usage.count(key(1), 'admitted')
    clock.ms = MIDNIGHT - 1
    usage.count(key(1), 'refused')
    usage.count(key(2), 'admitted')
    usage.count(key(3), 'refused')

    // Act
    await usage.flush()
    await usage.flush()

    // Assert
    assert.equal(storage.calls, 1)
    assert.deepEqual(storage.writes[0]?.rows.map((row) => [row.keyId, row.day]), [
      [1, DAY - 1], [1, DAY], [2, DAY - 1], [3, DAY - 1], [3, DAY]
    ])
    assert.deepEqual(storage.writes[0]?.lastUsed.map(([id]) => id), [1, 2, 3])
  })

  it('When a write fails, then its counts and last uses are kept and added to those of the next write', async () => {
    // Arrange
    const { usage, storage, clock, errors } = counter()
    usage.count(key(1), 'admitted')
    usage.count(key(2), 'refused')
    clock.ms += 1_000
    usage.count(key(1), 'admitted')
    storage.failing = true
    await usage.flush()
    storage.failing = false

    // Act
    clock.ms -= 500
    usage.count(key(1), 'refused')
    usage.count(key(1), 'admitted') // earlier than the last use kept from the failed write
    usage.count(key(3), 'admitted')
    await usage.flush()

    // Assert
    assert.equal(errors.length, 1)
    assert.equal(storage.calls, 2)
    assert.deepEqual(storage.writes, [{
      rows: [
        { keyId: 1, day: DAY - 1, admitted: 3, refused: 1 },
        { keyId: 2, day: DAY - 1, admitted: 0, refused: 1 },
        { keyId: 3, day: DAY - 1, admitted: 1, refused: 0 }
      ],
      lastUsed: [[1, clock.ms + 500], [3, clock.ms]]
    }])
  })

  it(`When ${MAX_USAGE_ENTRIES} keys and days wait and the database is up, then the next new one starts a write at once, and nothing is dropped`, async () => {
    // Arrange
    const { usage, storage, dropped } = counter()
    for (let id = 1; id <= MAX_USAGE_ENTRIES; id++) usage.count(key(id), 'admitted')
    assert.equal(storage.calls, 0, 'no write before the bound')

    // Act
    usage.count(key(MAX_USAGE_ENTRIES + 1), 'admitted')
    const startedAtOnce = storage.calls
    await usage.flush()

    // Assert
    assert.equal(startedAtOnce, 1, 'the write started with the count that passed the bound')
    assert.deepEqual(dropped, [])
    assert.deepEqual(storage.writes.map((w) => w.rows.length), [MAX_USAGE_ENTRIES, 1])
    assert.equal(storage.writes.flatMap((w) => w.rows).reduce((sum, row) => sum + row.admitted, 0), MAX_USAGE_ENTRIES + 1)
  })

  it(`When a write is slow, then at most ${MAX_USAGE_ENTRIES} new keys and days wait beside it, and further ones are dropped and told once per write`, async () => {
    // Arrange
    const { usage, storage, dropped } = counter()
    let release = (): void => {}
    storage.held = new Promise((resolve) => { release = resolve })
    for (let id = 1; id <= MAX_USAGE_ENTRIES + 1; id++) usage.count(key(id), 'admitted')
    assert.equal(storage.calls, 1, 'the count past the bound started a write, which waits')

    // Act
    for (let id = MAX_USAGE_ENTRIES + 2; id <= 2 * MAX_USAGE_ENTRIES + 3; id++) usage.count(key(id), 'admitted')
    release()
    await usage.flush()

    // Assert
    assert.deepEqual(dropped, [3], 'told once, as one number, not once a request: a log line each would flood the log during an outage')
    assert.deepEqual(storage.writes.map((w) => w.rows.length), [MAX_USAGE_ENTRIES, MAX_USAGE_ENTRIES])
  })

  it(`When the database stays away, then at most ${MAX_USAGE_ENTRIES} keys and days are kept, further ones are dropped and told, and counts to kept ones still add up`, async () => {
    // Arrange
    const { usage, storage, dropped } = counter()
    storage.failing = true
    for (let id = 1; id <= MAX_USAGE_ENTRIES; id++) usage.count(key(id), 'admitted')
    await usage.flush()

    // Act: five new keys while full, and one more request of a kept key.
    for (let id = MAX_USAGE_ENTRIES + 1; id <= MAX_USAGE_ENTRIES + 5; id++) usage.count(key(id), 'refused')
    await usage.flush()
    usage.count(key(1), 'admitted')
    storage.failing = false
    await usage.flush()

    // Assert
    const rows = storage.writes.flatMap((w) => w.rows)
    const written = rows.reduce((sum, row) => sum + row.admitted + row.refused, 0)
    const lost = dropped.reduce((sum, n) => sum + n, 0)
    assert.equal(storage.writes.length, 1)
    assert.ok(rows.length <= MAX_USAGE_ENTRIES, `${rows.length} keys and days were kept`)
    assert.deepEqual(dropped, [5], 'as many dropped as the bound left no room for, told once')
    assert.equal(written + lost, MAX_USAGE_ENTRIES + 6, 'every count was either written or told as dropped')
    assert.equal(rows.find((row) => row.keyId === 1)?.admitted, 2)
  })

  it('When started, then it writes every flushMs, and close() stops the timer and writes what is left', async () => {
    // Arrange
    mock.timers.enable({ apis: ['setInterval'] })
    const { usage, storage } = counter({ flushMs: 500 })
    usage.start()

    // Act
    usage.count(key(1), 'admitted')
    mock.timers.tick(499)
    await settled()
    const beforeInterval = storage.calls
    mock.timers.tick(1)
    await settled()
    const afterInterval = storage.calls
    usage.count(key(1), 'refused')
    await usage.close()
    mock.timers.tick(5_000)
    await settled()

    // Assert
    assert.equal(beforeInterval, 0)
    assert.equal(afterInterval, 1)
    assert.deepEqual(storage.writes.map((w) => w.rows), [
      [{ keyId: 1, day: DAY - 1, admitted: 1, refused: 0 }],
      [{ keyId: 1, day: DAY - 1, admitted: 0, refused: 1 }]
    ], 'the first at the interval, the rest at close, none after')
  })
})

/** Lets the promises a timer started run to their end. */
async function settled (): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve()
}
