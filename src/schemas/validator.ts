// Builds the request validators from the TypeBox schemas. Not
// @fastify/type-provider-typebox's: its `Value.Convert` rounds
// "9223372036854775807" to a double and takes " 5" for 5; this one converts
// only exact decimal integers, and names the field of every problem.
import { Compile, Type, Value, type TSchema } from './typebox.js'
import { clip, type ErrorDetail } from '../errors.js'
import { Check, Rule } from './kinds.js'

export type HttpPart = 'body' | 'querystring' | 'params' | 'headers'

/** Shaped as Fastify expects validation errors to be. */
export interface ValidationIssue {
  instancePath: string
  message: string
  keyword: string
  schemaPath: string
  params: Record<string, unknown>
}

/**
 * `true`: valid as it is. Fastify replaces a request part only when given a
 * `value`, and a replaced `headers` is copied on every later read of it.
 */
export type ValidationResult = true | { value: unknown } | { error: ValidationIssue[] }

/** Plain decimal digits; the schema then checks the range. */
const DECIMAL = /^\d{1,100}$/

/** At most this many problems are reported for one part of a request. */
const MAX_ISSUES = 20

type Schema = TSchema & Record<PropertyKey, unknown>

export function compileValidator (schema: TSchema, httpPart: HttpPart): (value: unknown) => ValidationResult {
  assertReported(schema as Schema)
  const check = Compile(checkable(schema as Schema))
  const integerFields = httpPart === 'body' ? new Map<string, 'Int64' | 'Integer'>() : integerProperties(schema as Schema)
  return (input) => {
    const value = integerFields.size === 0 ? input : convertIntegers(input, integerFields)
    if (check.Check(value)) return value === input ? true : { value }
    const issues: ValidationIssue[] = []
    for (const issue of problems(schema as Schema, '', value)) {
      issues.push(issue)
      if (issues.length >= MAX_ISSUES) break
    }
    return { error: issues }
  }
}

/**
 * The schema as the compiler is to check it: each kind of kinds.ts becomes
 * its own exact check alone, without the keywords that describe it in the
 * OpenAPI document (they would refuse a `bigint`, and count a string's
 * length otherwise).
 */
function checkable (schema: Schema): TSchema {
  const check = schema[Check]
  if (typeof check === 'function') {
    return Type.Refine(Type.Unknown(), (value) => (check as (value: unknown) => boolean)(value), () => String(schema[Rule]))
  }
  if (schema.type === 'array') return { ...schema, items: checkable(schema.items as Schema) }
  const properties = schema.properties as Record<string, Schema> | undefined
  if (properties === undefined) return schema
  return { ...schema, properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, checkable(property)])) }
}

/** Top-level properties of a query or path schema that hold integers. */
function integerProperties (schema: Schema): Map<string, 'Int64' | 'Integer'> {
  const fields = new Map<string, 'Int64' | 'Integer'>()
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  for (const [name, property] of Object.entries(properties)) {
    if (property.type !== 'integer') continue
    fields.set(name, property[Check] === undefined ? 'Integer' : 'Int64')
  }
  return fields
}

function convertIntegers (input: unknown, fields: Map<string, 'Int64' | 'Integer'>): unknown {
  if (typeof input !== 'object' || input === null) return input
  const output: Record<string, unknown> = { ...input }
  for (const [name, kind] of fields) {
    const raw = output[name]
    if (typeof raw !== 'string' || !DECIMAL.test(raw)) continue
    output[name] = kind === 'Int64' ? BigInt(raw) : Number(raw)
  }
  return output
}

/**
 * Every problem with a value that the compiled check refused, in a fixed
 * order: for an object, its missing fields, then its unknown fields as sent,
 * then each known field's own. The order and wording are the API's (a 400's
 * `details`); TypeBox lists every missing field in one error, at the object.
 */
function * problems (schema: Schema, path: string, value: unknown): Generator<ValidationIssue> {
  const issue = (keyword: string, at: Schema, where: string, fallback: string): ValidationIssue =>
    ({ instancePath: where, message: typeof at[Rule] === 'string' ? at[Rule] : fallback, keyword, schemaPath: '', params: {} })
  const check = schema[Check]
  if (typeof check === 'function') {
    if (!(check as (value: unknown) => boolean)(value)) yield issue('Kind', schema, path, 'is not valid')
    return
  }
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return yield issue('Object', schema, path, 'must be object')
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      const required = (schema.required ?? []) as string[]
      const sent = Object.getOwnPropertyNames(value)
      const fields = value as Record<string, unknown>
      for (const name of required) {
        if (!sent.includes(name)) yield issue('ObjectRequiredProperty', properties[name] ?? schema, `${path}/${escape(name)}`, 'is required')
      }
      if (schema.additionalProperties === false) {
        for (const name of sent) {
          if (!Object.hasOwn(properties, name)) yield issue('ObjectAdditionalProperties', schema, `${path}/${escape(name)}`, 'is not a known field')
        }
      }
      for (const [name, property] of Object.entries(properties)) {
        // A missing required field is also checked, as undefined, as it always was.
        if (required.includes(name) || fields[name] !== undefined) yield * problems(property, `${path}/${escape(name)}`, fields[name])
      }
      return
    }
    case 'string': {
      if (typeof value !== 'string') return yield issue('String', schema, path, 'must be string')
      // Lengths in UTF-16 units, as always. The compiled check counts code
      // points: the two agree on every request schema, where each bounded
      // string has an ASCII-only pattern. The pattern is matched by TypeBox,
      // as the compiled check matches it.
      if (typeof schema.minLength === 'number' && value.length < schema.minLength) yield issue('StringMinLength', schema, path, `must be string length greater or equal to ${schema.minLength}`)
      if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) yield issue('StringMaxLength', schema, path, `must be string length less or equal to ${schema.maxLength}`)
      if (typeof schema.pattern === 'string' && !Value.Check({ pattern: schema.pattern }, value)) yield issue('StringPattern', schema, path, `must be string to match '${schema.pattern}'`)
      return
    }
    case 'array': {
      if (!Array.isArray(value)) return yield issue('Array', schema, path, 'must be array')
      if (typeof schema.minItems === 'number' && value.length < schema.minItems) yield issue('ArrayMinItems', schema, path, `must have at least ${schema.minItems} items`)
      // Too many items are not each looked at: the count is the problem.
      if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return yield issue('ArrayMaxItems', schema, path, `must have at most ${schema.maxItems} items`)
      for (const [i, item] of value.entries()) yield * problems(schema.items as Schema, `${path}/${i}`, item)
      return
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) return yield issue('Integer', schema, path, 'must be an integer')
      const range = `must be an integer from ${String(schema.minimum)} to ${String(schema.maximum)}`
      if (typeof schema.maximum === 'number' && value > schema.maximum) yield issue('IntegerMaximum', schema, path, range)
      if (typeof schema.minimum === 'number' && value < schema.minimum) yield issue('IntegerMinimum', schema, path, range)
      return
    }
    default:
      // The compiled check refused the value, so a problem is always reported.
      yield issue('Unknown', schema, path, 'is not valid')
  }
}

/** What `problems` checks, by type; other annotations are fine, other assertions are not. */
const REPORTED: Record<string, Set<string>> = {
  object: new Set(['properties', 'required', 'additionalProperties']),
  array: new Set(['items', 'minItems', 'maxItems']),
  string: new Set(['minLength', 'maxLength', 'pattern']),
  integer: new Set(['minimum', 'maximum', 'format'])
}
const ANNOTATIONS = new Set(['type', '$id', 'title', 'description', 'default', 'examples'])

/**
 * Refuses, when the routes are built, a request schema with a keyword that
 * `problems` does not report on: a value refused for it would get no reason.
 */
function assertReported (schema: Schema): void {
  if (typeof schema[Check] === 'function') return
  const reported = REPORTED[String(schema.type)]
  const unknown = Object.keys(schema).filter((key) => !ANNOTATIONS.has(key) && reported?.has(key) !== true)
  if (reported === undefined || unknown.length > 0 || (schema.additionalProperties !== undefined && typeof schema.additionalProperties !== 'boolean')) {
    throw new Error(`request schema not supported by the validator: ${JSON.stringify(schema)}`)
  }
  for (const property of Object.values((schema.properties ?? {}) as Record<string, Schema>)) assertReported(property)
  if (schema.type === 'array') assertReported(schema.items as Schema)
}

/** A field name as a JSON Pointer segment. */
const escape = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1')

/** An unknown field is named as sent: a long name is cut, so that an error stays small. */
const MAX_FIELD_LENGTH = 200

/** Turns validation issues into the `details` of an Error body. */
export function toDetails (part: string, issues: readonly ValidationIssue[]): ErrorDetail[] {
  const seen = new Set<string>()
  const details: ErrorDetail[] = []
  for (const issue of issues) {
    const path = issue.instancePath.replace(/^\//, '').split('/').filter((p) => p !== '').join('.')
    const field = clip(path === '' ? part : `${part}.${path}`, MAX_FIELD_LENGTH)
    const key = `${field}\n${issue.message}`
    if (seen.has(key)) continue
    seen.add(key)
    details.push({ field, reason: issue.message })
  }
  return details
}
