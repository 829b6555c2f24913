import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { JsonBodyError, parseJsonBody } from '../src/json.js'

describe('parseJsonBody', () => {
  it('When an integer exceeds 2^53, then it is kept exactly as a bigint', () => {
    assert.deepEqual(parseJsonBody('{"a":9223372036854775807}'), { a: 9223372036854775807n })
  })

  it('When an integer is written as 1.0 or 1e3, then it is the same integer', () => {
    assert.deepEqual(parseJsonBody('[1.0, 1e3]'), [1n, 1000n])
  })

  it('When a number has a fraction, then it stays a number', () => {
    assert.deepEqual(parseJsonBody('[1.5]'), [1.5])
  })

  it('When a huge number is written with an exponent, then it is neither a number nor a bigint', () => {
    const [value] = parseJsonBody('[1e30]') as unknown[]
    assert.notEqual(typeof value, 'number')
    assert.notEqual(typeof value, 'bigint')
  })

  for (const key of ['__proto__', 'constructor', 'prototype']) {
    it(`When the key ${key} appears at any depth, then parsing fails`, () => {
      assert.throws(() => parseJsonBody(`{"a":{"${key}":{}}}`), JsonBodyError)
    })
  }

  it('When arrays are nested thousands deep, then parsing fails cleanly', () => {
    assert.throws(() => parseJsonBody('['.repeat(16_000)), (error: unknown) => error instanceof JsonBodyError && /nested too deeply/.test(error.message))
  })

  it('When the text is not JSON, then a JsonBodyError says where', () => {
    assert.throws(() => parseJsonBody('{"a":'), (error: unknown) => error instanceof JsonBodyError && /position/.test(error.message))
  })
})
