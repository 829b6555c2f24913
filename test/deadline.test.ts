// A promise given a deadline (src/deadline.ts): its answer when in time, a
// DeadlineError when late, and what it gets after that can be given back.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { DeadlineError, within, type Waiting } from '../src/deadline.js'

describe('within', () => {
  it('When the work answers in time, then that is the answer, and the work is still waited for as it answers', async () => {
    // Arrange
    let seen: Waiting | undefined

    // Act
    const answer = await within(1_000, async (waiting) => {
      seen = waiting
      await delay(5)
      return waiting.stopped ? 'late' : 'in time'
    })

    // Assert
    assert.equal(answer, 'in time')
    assert.equal(seen?.stopped, false)
  })

  it('When the work is late, then a DeadlineError naming the time, and the work learns that nobody waits for it any more', async () => {
    // Arrange
    let stoppedWhenDone: boolean | undefined
    const work = async (waiting: Waiting): Promise<string> => {
      await delay(200)
      stoppedWhenDone = waiting.stopped
      return 'too late'
    }

    // Act
    const outcome = await within(20, work).then((answer) => answer, (error: unknown) => error)
    await delay(300)

    // Assert
    assert.ok(outcome instanceof DeadlineError, String(outcome))
    assert.equal(outcome.message, 'no answer within 20 ms')
    assert.equal(stoppedWhenDone, true)
  })

  it('When the work fails in time, then its error is the answer', async () => {
    // Act
    const outcome = await within(1_000, async () => { throw new Error('refused') }).then(() => undefined, (error: unknown) => error)

    // Assert
    assert.ok(outcome instanceof Error)
    assert.equal(outcome.message, 'refused')
  })
})
