// JSON without losing a digit. `JSON.parse` turns 9223372036854775807 into
// 9223372036854775808, and `JSON.stringify` cannot write a bigint at all;
// lossless-json hands over each number's digits and writes bigints as
// integers.
import { isLosslessNumber, parse, stringify } from 'lossless-json'
import { int64Properties } from './generated/openapi.js'

const INT64 = new Set<string>(int64Properties)

/** Parses a response body: the document's int64 properties (`id`, `categoryId`) become `bigint`, every other number a `number`. */
export function parseJson (text: string): unknown {
  return parse(text, (key, value) => {
    if (!isLosslessNumber(value)) return value
    return INT64.has(key) ? BigInt(value.toString()) : Number(value.toString())
  })
}

/** Writes a request body; a `bigint` is written as a JSON integer. */
export function stringifyJson (value: unknown): string {
  return stringify(value) ?? 'null'
}
