// A key's share of each turn of the event loop (src/limits/turn-share.ts):
// past its share a key's requests wait for later turns, in order, while
// other keys' requests go first.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { SHARE_A_TURN, TurnShare } from '../../src/limits/turn-share.js'

/** Takes `count` requests of `keyId`, recording each one's start in `started` as `keyId:n`. */
function arrive (turns: TurnShare, keyId: number, count: number, started: string[]): void {
  for (let n = 0; n < count; n++) {
    const wait = turns.take(keyId)
    if (wait === undefined) started.push(`${keyId}:${n}`)
    else wait.then(() => { started.push(`${keyId}:${n}`) }, () => {})
  }
}

describe('a key\'s share of a turn', () => {
  it('When a key sends more than its share in one turn, then the rest start in the next turns, a share each, oldest first', async () => {
    // Arrange
    const turns = new TurnShare()
    const started: string[] = []

    // Act
    arrive(turns, 1, SHARE_A_TURN * 2 + 3, started)
    const inFirstTurn = [...started]
    await nextTurn()
    const afterSecond = [...started]
    await nextTurn()
    await nextTurn()

    // Assert
    const names = (from: number, to: number): string[] => Array.from({ length: to - from }, (_v, i) => `1:${from + i}`)
    assert.deepEqual(inFirstTurn, names(0, SHARE_A_TURN))
    assert.deepEqual(afterSecond, names(0, SHARE_A_TURN * 2))
    assert.deepEqual(started, names(0, SHARE_A_TURN * 2 + 3))
    assert.equal(turns.waiting(1), 0)
  })

  it('When a greedy key has requests waiting, then another key\'s request starts at once, and the greedy key\'s new ones queue behind its own', async () => {
    // Arrange
    const turns = new TurnShare()
    const started: string[] = []
    arrive(turns, 1, SHARE_A_TURN + 2, started)

    // Act: in the same turn, a polite key; then the greedy key once more.
    arrive(turns, 2, 1, started)
    const greedyAgain = turns.take(1)
    await nextTurn()

    // Assert
    assert.equal(started.at(SHARE_A_TURN), '2:0', 'the polite key went before the greedy key\'s waiting requests')
    assert.notEqual(greedyAgain, undefined, 'a key with requests waiting does not jump its own queue')
    assert.deepEqual(started.slice(SHARE_A_TURN + 1), ['1:8', '1:9'])
    await greedyAgain
    assert.equal(turns.waiting(1), 0)
  })

  it('When a key has used its share, then in the next turn it has a fresh one', async () => {
    // Arrange
    const turns = new TurnShare()
    const started: string[] = []
    arrive(turns, 3, SHARE_A_TURN, started)

    // Act
    await nextTurn()
    const next = Array.from({ length: SHARE_A_TURN }, () => turns.take(3))

    // Assert
    assert.deepEqual(next, Array.from({ length: SHARE_A_TURN }, () => undefined))
    assert.equal(turns.take(3) instanceof Promise, true)
    await nextTurn()
  })
})
