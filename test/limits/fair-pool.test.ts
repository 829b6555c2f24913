// The database pool's places, given to keys in turn (src/limits/fair-pool.ts):
// a key alone takes every place; with several waiting, each place given
// back goes to the next key in turn, not to the oldest request.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { FairPool, type GiveBack } from '../../src/limits/fair-pool.js'

/** Takes a place for each key in `keys`, in order; `order` records each as it gets its place. */
function queue (pool: FairPool, keys: number[], order: number[], held: GiveBack[]): void {
  for (const key of keys) {
    const place = pool.take(key)
    if (typeof place === 'function') {
      order.push(key)
      held.push(place)
    } else {
      place.then((giveBack) => { order.push(key); held.push(giveBack) }, () => {})
    }
  }
}

const settled = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

describe('the pool\'s places in turn', () => {
  it('When a key is alone, then it takes every place, and its next request waits for one to be given back', async () => {
    // Arrange
    const pool = new FairPool(3)
    const order: number[] = []
    const held: GiveBack[] = []

    // Act
    queue(pool, [1, 1, 1, 1], order, held)
    const beforeGiving = [...order]
    held[0]?.()
    await settled()

    // Assert
    assert.deepEqual(beforeGiving, [1, 1, 1])
    assert.deepEqual(order, [1, 1, 1, 1])
    assert.equal(pool.waiting(), 0)
  })

  it('When a greedy key has many waiting and a polite key one, then the polite key gets the second place given back, not the sixth', async () => {
    // Arrange: two places, both the greedy key's, and five more of its requests waiting before the polite one.
    const pool = new FairPool(2)
    const order: number[] = []
    const held: GiveBack[] = []
    queue(pool, [1, 1, 1, 1, 1, 1, 1, 2], order, held)

    // Act
    held[0]?.()
    held[1]?.()
    await settled()

    // Assert
    assert.deepEqual(order, [1, 1, 1, 2])
    assert.equal(pool.waiting(), 4)
  })

  it('When a place is given back twice, then it counts once', async () => {
    // Arrange
    const pool = new FairPool(1)
    const order: number[] = []
    const held: GiveBack[] = []
    queue(pool, [1, 2, 3], order, held)

    // Act
    held[0]?.()
    held[0]?.()
    await settled()

    // Assert
    assert.deepEqual(order, [1, 2])
    assert.equal(pool.waiting(), 1)
  })

  it('When no place is given back within the wait, then the request goes on without one, and the places are counted as before', async () => {
    // Arrange
    const pool = new FairPool(1, 50)
    const first = pool.take(1)
    assert.equal(typeof first, 'function')

    // Act
    const started = performance.now()
    const late = await pool.take(2)
    const waited = performance.now() - started
    late()
    const waitingAfter = pool.waiting()
    ;(first as GiveBack)()
    const next = pool.take(3)

    // Assert
    assert.ok(waited >= 45, `went on after ${waited} ms`)
    assert.equal(waitingAfter, 0)
    assert.equal(typeof next, 'function', 'the one place was free again')
  })
})
