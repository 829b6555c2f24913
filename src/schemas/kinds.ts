// Two value kinds that JSON Schema keywords describe but that a validator
// built on JavaScript numbers and UTF-16 strings gets wrong. Each carries the
// standard keywords (so the OpenAPI document says the truth) and is checked
// by the exact function it carries (so validation does too): the request
// validator (validator.ts) checks such a kind with that function alone, in
// place of its keywords.
import { Type, type TSchema, type TUnsafe } from './typebox.js'

/**
 * A schema read as the JSON Schema object it is (`schema.$id`,
 * `schema.properties`, …), as TypeBox 0.x typed every schema.
 */
export type JsonSchema = TSchema & Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

export const INT64_MAX = 9223372036854775807n

/** Where a kind keeps what JSON cannot carry: its exact check, a sentence for errors. */
export const Check = Symbol('petstore.check')
export const Rule = Symbol('petstore.rule')

interface Int64Options {
  minimum: bigint
  maximum: bigint
  description?: string
  examples?: unknown[]
}

/**
 * A JSON integer that may exceed 2^53: held as a `bigint` once parsed, so it
 * is compared, stored and written back exactly.
 */
export function Int64 (options: Int64Options): TUnsafe<bigint> {
  const { minimum, maximum, ...rest } = options
  return Type.Unsafe<bigint>({
    ...rest,
    type: 'integer',
    format: 'int64',
    // Doubles here, for JSON Schema tooling; the exact bounds are checked below
    // and restored when the OpenAPI document is written.
    minimum: Number(minimum),
    maximum: Number(maximum),
    [Check]: (value: unknown) => typeof value === 'bigint' && value >= minimum && value <= maximum,
    [Rule]: `must be an integer from ${minimum} to ${maximum}`
  })
}

interface TextOptions {
  maxLength: number
  description?: string
  examples?: unknown[]
}

// The rule is checked here rather than by the keywords, so that it is the
// same whatever a validator makes of `\p{…}` in a pattern and of string
// length (JSON Schema counts code points; a count of graphemes or of UTF-16
// units differs on emoji and combining marks).
const ONLY_WHITE_SPACE = /^\p{White_Space}*$/u
// A lone surrogate (half of a UTF-16 pair) is no character: it cannot be stored as UTF-8 unchanged.
const CONTROL_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u

/**
 * A human-readable label: 1 to maxLength code points, not only white space,
 * no control characters. Stored and returned exactly as sent.
 */
export function Text (options: TextOptions): TUnsafe<string> {
  const { maxLength } = options
  return Type.Unsafe<string>({
    ...options,
    type: 'string',
    minLength: 1,
    pattern: '^(?!\\p{White_Space}*$)[^\\p{Cc}\\p{Cs}]*$',
    [Check]: (value: unknown) => isText(value, maxLength),
    [Rule]: `must be a string of 1 to ${maxLength} characters, not only white space, without control characters`
  })
}

function isText (value: unknown, maxLength: number): boolean {
  if (typeof value !== 'string' || value === '') return false
  if (ONLY_WHITE_SPACE.test(value) || CONTROL_OR_LONE_SURROGATE.test(value)) return false
  // Counting code points stops early: a long string costs no more than a short one.
  let count = 0
  for (const _ of value) { // eslint-disable-line @typescript-eslint/no-unused-vars
    if (++count > maxLength) return false
  }
  return true
}

/** One of a fixed set of strings, written as a JSON Schema `enum`. */
export function StringEnum<T extends string> (values: readonly T[], options: { $id?: string, description?: string, default?: T } = {}): TUnsafe<T> {
  const allowed: readonly string[] = values
  return Type.Unsafe<T>({
    ...options,
    type: 'string',
    enum: [...values],
    [Check]: (value: unknown) => typeof value === 'string' && allowed.includes(value),
    [Rule]: `must be one of ${values.map((v) => `"${v}"`).join(', ')}`
  })
}
