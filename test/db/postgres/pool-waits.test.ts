// How long the oldest waiter of a pool has waited, from a queue that is
// served first in, first out, as node-postgres serves its own.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PoolWaits } from '../../../src/db/postgres/pool-waits.js'

/** A pool's queue as PoolWaits sees it: a call may join it, and the oldest waiter leaves it first. */
class FakeQueue {
  waitingCount = 0
  join (): void { this.waitingCount++ }
  serveOldest (): void { this.waitingCount-- }
}

describe('PoolWaits', () => {
  it('When calls queue for a connection and the oldest are served, then the longest wait is that of the oldest still waiting', () => {
    // Arrange
    let clock = 0
    const queue = new FakeQueue()
    const waits = new PoolWaits(() => clock)

    // Act
    for (const at of [10, 20, 30]) {
      clock = at
      waits.enter(queue, () => queue.join())
    }
    clock = 100
    const allWaiting = waits.longest(queue)
    queue.serveOldest()
    const oneServed = waits.longest(queue)
    queue.serveOldest()
    queue.serveOldest()
    const noneWaiting = waits.longest(queue)

    // Assert
    assert.deepEqual([allWaiting, oneServed, noneWaiting], [90, 80, 0])
  })

  it('When a call gets its connection at once, then it is not noted as waiting', () => {
    // Arrange
    let clock = 0
    const queue = new FakeQueue()
    const waits = new PoolWaits(() => clock)

    // Act
    const answer = waits.enter(queue, () => 'served')
    clock = 50

    // Assert
    assert.equal(answer, 'served')
    assert.equal(waits.longest(queue), 0)
  })

  it('When thousands of calls queue and are served in turn, then the wait read is always the oldest waiter\'s', () => {
    // Arrange
    let clock = 0
    const queue = new FakeQueue()
    const waits = new PoolWaits(() => clock)
    const joined: number[] = []

    // Act and assert: three join, two are served, over and over.
    for (let round = 0; round < 2_000; round++) {
      for (let i = 0; i < 3; i++) {
        clock++
        joined.push(clock)
        waits.enter(queue, () => queue.join())
      }
      queue.serveOldest()
      queue.serveOldest()
      joined.splice(0, 2)
      assert.equal(waits.longest(queue), clock - (joined[0] ?? clock), `round ${round}`)
    }
  })
})
