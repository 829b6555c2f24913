// The service's own load, as the shedder reads it (docs/OPERATING.md:
// Overload): which signal is over its threshold, read every half second,
// and the event loop's delay as Node's histogram gives it.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { READ_EVERY_MS, eventLoopDelay, watchLoad, watchOwnLoad, type LoadReading } from '../../src/telemetry/load.js'

const THRESHOLDS = { eventLoopDelayMs: 200, dbPoolWaitMs: 500 }

describe('the load watch', () => {
  it('When a reading is over a threshold, then the watch names that signal, the event loop first; at or under both, none', () => {
    // Arrange
    let reading: LoadReading = { eventLoopDelayMs: 0, dbPoolWaitMs: undefined }
    const watch = watchLoad({ read: () => reading, thresholds: THRESHOLDS, everyMs: 3_600_000 })
    const causeOf = (next: LoadReading): string | undefined => {
      reading = next
      watch.read()
      return watch.cause
    }
    try {
      // Act and assert
      assert.equal(watch.cause, undefined, 'read once at the start')
      assert.equal(causeOf({ eventLoopDelayMs: 201, dbPoolWaitMs: undefined }), 'event_loop_delay')
      assert.equal(causeOf({ eventLoopDelayMs: 200, dbPoolWaitMs: 500 }), undefined)
      assert.equal(causeOf({ eventLoopDelayMs: 10, dbPoolWaitMs: 501 }), 'db_pool_wait')
      assert.equal(causeOf({ eventLoopDelayMs: 900, dbPoolWaitMs: 4_000 }), 'event_loop_delay')
      assert.equal(causeOf({ eventLoopDelayMs: 12, dbPoolWaitMs: 0 }), undefined)
      assert.deepEqual(watch.reading, { eventLoopDelayMs: 12, dbPoolWaitMs: 0 })
    } finally {
      watch.close()
    }
  })

  it('When half a second passes, then the load is read again and each reading is told; once closed, no more', (t) => {
    // Arrange
    t.mock.timers.enable({ apis: ['setInterval'] })
    let delay = 0
    const told: number[] = []
    const watch = watchLoad({ read: () => ({ eventLoopDelayMs: delay, dbPoolWaitMs: undefined }), thresholds: THRESHOLDS, onReading: (reading) => told.push(reading.eventLoopDelayMs) })

    // Act
    delay = 250
    t.mock.timers.tick(READ_EVERY_MS - 1)
    const before = watch.cause
    t.mock.timers.tick(1)
    const after = watch.cause
    watch.close()
    delay = 5
    t.mock.timers.tick(READ_EVERY_MS)

    // Assert
    assert.deepEqual([before, after], [undefined, 'event_loop_delay'])
    assert.deepEqual(told, [0, 250])
  })

  it('When the storage\'s pool has had a query waiting longer than its threshold, then the service\'s own watch names db_pool_wait; without a pool (SQLite), never', () => {
    // Arrange
    let pool: { longestWaitMs: number } | undefined = { longestWaitMs: 0 }
    const watch = watchOwnLoad({ poolUse: () => pool, thresholds: THRESHOLDS })
    try {
      // Act
      pool = { longestWaitMs: 800 }
      watch.read()
      const waited = [watch.cause, watch.reading.dbPoolWaitMs]
      pool = undefined
      watch.read()
      const noPool = [watch.cause, watch.reading.dbPoolWaitMs]

      // Assert
      assert.deepEqual(waited, ['db_pool_wait', 800])
      assert.deepEqual(noPool, [undefined, undefined])
    } finally {
      watch.close()
    }
  })
})

describe('the event loop\'s delay', () => {
  it('When the loop is blocked for 350 ms, then the delay read after it is over 300 ms; read again at once, it is back under 200', async () => {
    // Arrange
    const delay = eventLoopDelay()
    try {
      delay.read()

      // Act
      const until = performance.now() + 350
      while (performance.now() < until) { /* busy: the loop cannot turn */ }
      await turnOfTheLoop()
      const blocked = delay.read()
      await turnOfTheLoop()
      const after = delay.read()

      // Assert
      assert.ok(blocked > 300, `read ${blocked} ms`)
      assert.ok(after < 200, `read ${after} ms`)
    } finally {
      delay.close()
    }
  })
})

/** Lets the event loop turn once, timers included, so that Node's histogram records the turn that just ended. */
async function turnOfTheLoop (): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1))
}
