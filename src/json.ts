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
 * Parses a request body. Integral numbers become `bigint`; other numbers stay
 * `number` when a double holds them exactly, and are otherwise left as a
 * `LosslessNumber`, which no schema accepts: a value is refused, never changed.
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

function parseNumber (literal: string): unknown {
  if (/^-?\d+$/.test(literal)) return BigInt(literal)
  const value = Number(literal)
  if (Number.isInteger(value)) {
    // 1.0 or 1e3: an integer in JSON's data model, kept exactly when it is small.
    return Number.isSafeInteger(value) ? BigInt(value) : new LosslessNumber(literal)
  }
  // A fraction: the double nearest to it is what any JSON client means by it.
  return Number.isFinite(value) ? value : new LosslessNumber(literal)
}

function rejectForbiddenKeys (key: string, value: unknown): unknown {
  if (FORBIDDEN_KEYS.has(key)) throw new JsonBodyError(`Body must not contain the key "${key}"`)
  return value
}
