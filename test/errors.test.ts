import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ApiError, Errors, errorBody } from '../src/errors.js'

describe('ApiError', () => {
  it('When a 4xx is made, then it is an ApiError and an Error without a captured stack, and Error.stackTraceLimit is never touched (it used to be set to 0 and back for each one)', () => {
    // Arrange: a limit no other code sets, and a setter that sees every write to it.
    const original = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')
    const writes: unknown[] = []
    let limit: unknown = 17
    Object.defineProperty(Error, 'stackTraceLimit', { configurable: true, get: () => limit, set: (value) => { writes.push(value); limit = value } })
    try {
      // Act
      const refusal = Errors.rateLimited(30)

      // Assert
      assert.deepEqual(writes, [])
      assert.ok(refusal instanceof ApiError && refusal instanceof Error)
      assert.equal(refusal.stack, undefined)
      assert.equal(String(refusal), 'ApiError: Too many requests: wait for the number of seconds in Retry-After, then back off exponentially.')
      assert.deepEqual([refusal.code, refusal.status, refusal.headers], ['rate_limited', 429, { 'retry-after': '30' }])
    } finally {
      if (original !== undefined) Object.defineProperty(Error, 'stackTraceLimit', original)
    }
  })

  it('When a 5xx is made, then it keeps its stack for the log, and its body names no internals', () => {
    const fault = Errors.internal()

    assert.match(fault.stack ?? '', /^ApiError: Something went wrong on our side; the error was logged\.\n\s+at /)
    assert.deepEqual(errorBody(fault), { code: 'internal_error', message: 'Something went wrong on our side; the error was logged.', status: 500 })
  })
})
