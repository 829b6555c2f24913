import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { LosslessNumber } from 'lossless-json'
import { JsonBodyError, parseJsonBody } from '../../src/plugins/json.js'

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

  it('When a huge integer is written with an exponent, then it is that exact bigint, for the range check to refuse', () => {
    assert.deepEqual(parseJsonBody('[1e30]'), [10n ** 30n])
  })

  it('When an exponent would make an integer of millions of digits, then it is neither a number nor a bigint', () => {
    const [value] = parseJsonBody('[1e999999999]') as unknown[]
    assert.ok(value instanceof LosslessNumber)
  })

  it('When a fraction is past the range of a double, then it is neither a number nor a bigint', () => {
    const [value] = parseJsonBody(`[1.${'0'.repeat(500)}1e400]`) as unknown[]
    assert.ok(value instanceof LosslessNumber)
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

// Regression: "numbers silently rounded". 0.99999999999999999 was stored as 1:
// whether a number was an integer was asked of the double it rounds to.
describe('parseJsonBody: numbers silently rounded (an integer is decided from the literal, exactly)', () => {
  const integers: Array<[string, bigint]> = [
    ['1.0', 1n],
    ['1e3', 1000n],
    ['1.5e1', 15n],
    ['10e-1', 1n],
    ['1E+2', 100n],
    ['-0.0', 0n],
    ['0e-7', 0n],
    ['-1.25e2', -125n],
    ['123456789012345678900000000000e-10', 12345678901234567890n],
    ['9223372036854775807.000', 9223372036854775807n],
    ['9.223372036854775808e18', 9223372036854775808n],
    ['0.0001e4', 1n],
    ['1.000000000000000000001e21', 1000000000000000000001n]
  ]
  for (const [literal, expected] of integers) {
    it(`When ${literal} is sent, then it is the integer ${expected}`, () => {
      assert.deepEqual(parseJsonBody(`[${literal}]`), [expected])
    })
  }

  const fractions = ['0.99999999999999999', '1.000000000000000000001', '1.5', '15e-1', '-0.5', '123456789012345678901234567890e-10', '9223372036854775807.5']
  for (const literal of fractions) {
    it(`When ${literal} is sent, then it is not an integer`, () => {
      const [value] = parseJsonBody(`[${literal}]`) as unknown[]
      assert.notEqual(typeof value, 'bigint')
      assert.equal(value, Number(literal))
    })
  }

  it('When any digits and exponent are sent, then the value is an integer exactly when the rational they denote is', () => {
    const digitString = (min: number, max: number): fc.Arbitrary<string> =>
      fc.array(fc.constantFrom('0', '0', '0', '1', '5', '9'), { minLength: min, maxLength: max }).map((d) => d.join(''))
    const literal = fc.record({
      negative: fc.boolean(),
      // JSON: no leading zero before other digits.
      whole: fc.oneof(fc.constant('0'), digitString(0, 30).map((d) => `1${d}`)),
      fraction: fc.option(digitString(1, 30), { nil: undefined }),
      exponent: fc.option(fc.integer({ min: -60, max: 60 }), { nil: undefined }),
      e: fc.constantFrom('e', 'E', 'e+', 'E+')
    })
    fc.assert(fc.property(literal, ({ negative, whole, fraction, exponent, e }) => {
      const text = `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}` +
        (exponent === undefined ? '' : `${exponent < 0 ? e.slice(0, 1) : e}${exponent}`)
      // The rational numerator / 10^shift, by BigInt arithmetic alone.
      const numerator = BigInt(whole + (fraction ?? '')) * (negative ? -1n : 1n)
      const shift = (fraction?.length ?? 0) - (exponent ?? 0)
      const expected = shift <= 0
        ? numerator * 10n ** BigInt(-shift)
        : numerator % 10n ** BigInt(shift) === 0n ? numerator / 10n ** BigInt(shift) : undefined
      const [value] = parseJsonBody(`[${text}]`) as unknown[]
      if (expected === undefined) assert.equal(typeof value, 'number', text)
      else assert.equal(value, expected, text)
    }), { numRuns: 2000 })
  })
})
