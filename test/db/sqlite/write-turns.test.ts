import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { WriteTurn, createWriteTurns, releaseTurnOf } from '../../../src/db/sqlite/write-turns.js'

describe('write turns', () => {
  it('When one thread holds the turn, then another gets it only once it is given, and at once then', async () => {
    // Arrange
    const turns = createWriteTurns()
    const first = new WriteTurn(turns, 1)
    const second = new WriteTurn(turns, 2)
    await first.take()
    let secondHasIt = false

    // Act
    const waiting = second.take().then(() => { secondHasIt = true })
    await new Promise((resolve) => setImmediate(resolve))
    const beforeGiven = secondHasIt
    first.give()
    await waiting

    // Assert
    assert.equal(beforeGiven, false)
    assert.equal(secondHasIt, true)
    second.give()
  })

  it('When the thread holding the turn ended, then releasing its turn lets the others write, and releasing another thread\'s turn does nothing', async () => {
    // Arrange
    const turns = createWriteTurns()
    const dead = new WriteTurn(turns, 7)
    const alive = new WriteTurn(turns, 8)
    await dead.take()

    // Act
    releaseTurnOf(turns, 8)
    const stillHeld = new Int32Array(turns)[0]
    releaseTurnOf(turns, 7)
    await alive.take()

    // Assert
    assert.equal(stillHeld, 8, 'the lock word names thread 7 as threadId + 1')
    assert.equal(new Int32Array(turns)[0], 9)
    alive.give()
  })
})
