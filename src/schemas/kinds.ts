// Two value kinds that JSON Schema keywords describe but that a validator
// built on JavaScript numbers and UTF-16 strings gets wrong. Each carries the
// standard keywords (so the OpenAPI document says the truth) and is checked
// by the exact function registered here (so validation does too).
import { Kind, Type, TypeRegistry, type TUnsafe } from '@sinclair/typebox'

export const INT64_MAX = 9223372036854775807n

/** Where a kind keeps what JSON cannot carry: exact bounds, a sentence for errors. */
const Exact = Symbol('petstore.exact')
export const Rule = Symbol('petstore.rule')

interface ExactBounds { minimum: bigint, maximum: bigint }

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
    [Kind]: 'Int64',
    ...rest,
    type: 'integer',
    format: 'int64',
    // Doubles here, for JSON Schema tooling; the exact bounds are checked below
    // and restored when the OpenAPI document is written.
    minimum: Number(minimum),
    maximum: Number(maximum),
    [Exact]: { minimum, maximum } satisfies ExactBounds,
    [Rule]: `must be an integer from ${minimum} to ${maximum}`
  })
}

TypeRegistry.Set<{ [Exact]: ExactBounds }>('Int64', (schema, value) =>
  typeof value === 'bigint' && value >= schema[Exact].minimum && value <= schema[Exact].maximum)

interface TextOptions {
  maxLength: number
  description?: string
  examples?: unknown[]
}

// JSON Schema counts string length in code points, and `\p{…}` needs the
// regular expression's `u` flag; TypeBox's compiler counts UTF-16 units and
// compiles patterns without it, so the rule is checked here instead.
const ONLY_WHITE_SPACE = /^\p{White_Space}*$/u
// A lone surrogate (half of a UTF-16 pair) is no character: it cannot be stored as UTF-8 unchanged.
const CONTROL_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u

/**
 * A human-readable label: 1 to maxLength code points, not only white space,
 * no control characters. Stored and returned exactly as sent.
 */
export function Text (options: TextOptions): TUnsafe<string> {
  return Type.Unsafe<string>({
    [Kind]: 'Text',
    ...options,
    type: 'string',
    minLength: 1,
    pattern: '^(?!\\p{White_Space}*$)[^\\p{Cc}\\p{Cs}]*$',
    [Rule]: `must be a string of 1 to ${options.maxLength} characters, not only white space, without control characters`
  })
}

TypeRegistry.Set<{ maxLength: number }>('Text', (schema, value) => {
  if (typeof value !== 'string' || value === '') return false
  if (ONLY_WHITE_SPACE.test(value) || CONTROL_OR_LONE_SURROGATE.test(value)) return false
  // Counting code points stops early: a long string costs no more than a short one.
  let count = 0
  for (const _ of value) { // eslint-disable-line @typescript-eslint/no-unused-vars
    if (++count > schema.maxLength) return false
  }
  return true
})

/** One of a fixed set of strings, written as a JSON Schema `enum`. */
export function StringEnum<T extends string> (values: readonly T[], options: { $id?: string, description?: string, default?: T } = {}): TUnsafe<T> {
  return Type.Unsafe<T>({
    [Kind]: 'StringEnum',
    ...options,
    type: 'string',
    enum: [...values],
    [Rule]: `must be one of ${values.map((v) => `"${v}"`).join(', ')}`
  })
}

TypeRegistry.Set<{ enum: string[] }>('StringEnum', (schema, value) =>
  typeof value === 'string' && schema.enum.includes(value))
