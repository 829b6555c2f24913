// JSON request bodies, parsed without losing a digit.
//
// `JSON.parse` turns 9223372036854775807 into 9223372036854775808: every
// int64 above 2^53 would be silently changed. lossless-json hands us each
// number's literal text, so integers become BigInt and are never rounded.
import { LosslessNumber, parse } from 'lossless-json'

/** Keys that could reach an object's prototype once a body is copied around. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

export class JsonBodyError extends Error {
  override name = 'JsonBodyError'
}

/**
 * Parses a request body. A number whose exact value is an integer (`7`, `7.0`, `70e-1`)
 * becomes that `bigint`, a fraction the nearest double; what neither holds (1e400, an
 * integer too long to build) stays a `LosslessNumber`, which no schema accepts: refused, never changed.
 */
export function parseJsonBody (text: string): unknown {
  try {
    return parse(text, rejectForbiddenKeys, parseNumber)
  } catch (error) {
    if (error instanceof JsonBodyError) throw error
    if (error instanceof RangeError) throw new JsonBodyError('it is nested too deeply')
    throw new JsonBodyError(error instanceof Error ? error.message : 'it cannot be parsed')
  }
}

/**
 * A JSON number's parts (RFC 8259 §6); lossless-json has checked the grammar.
 * Written by hand: no maintained library says whether a decimal literal is an
 * integer without going through a double, which is the bug this avoids.
 */
const NUMBER_PARTS = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/

/**
 * An integer longer than this is past every range the API takes; building
 * 10^exponent for an exponent a client chose would cost memory and time
 * without bound, so it is left unconverted, and refused like any number out
 * of range.
 */
const MAX_INTEGER_DIGITS = 1024

function parseNumber (literal: string): unknown {
  if (/^-?\d+$/.test(literal)) return BigInt(literal)
  const integer = exactInteger(literal)
  if (integer !== undefined) return integer
  // A fraction: the double nearest to it is what any JSON client means by it.
  const value = Number(literal)
  return Number.isFinite(value) ? value : new LosslessNumber(literal)
}

/**
 * The exact integer a literal such as `1.0`, `1e3` or `1.5e1` denotes, from
 * its digits alone; undefined when its exact value has a fraction. A double
 * cannot decide this: 0.99999999999999999 and 1.000000000000000000001 both
 * round to 1.
 */
function exactInteger (literal: string): bigint | LosslessNumber | undefined {
  const parts = NUMBER_PARTS.exec(literal)
  if (parts === null) return undefined
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = parts
  // value = significant × 10^scale, without leading or trailing zeros.
  const digits = whole + fraction
  let first = 0
  while (first < digits.length && digits[first] === '0') first++
  if (first === digits.length) return 0n // 0.0, -0.0, 0e5: zero has no sign in JSON's data model.
  let end = digits.length
  while (digits[end - 1] === '0') end--
  const significant = digits.slice(first, end)
  const scale = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - end)
  if (scale < 0n) return undefined
  if (BigInt(significant.length) + scale > BigInt(MAX_INTEGER_DIGITS)) return new LosslessNumber(literal)
  const magnitude = BigInt(significant) * 10n ** scale
  return sign === '-' ? -magnitude : magnitude
}

function rejectForbiddenKeys (key: string, value: unknown): unknown {
  if (FORBIDDEN_KEYS.has(key)) throw new JsonBodyError(`Body must not contain the key "${key}"`)
  return value
}
