// Builds the request validators from the TypeBox schemas.
//
// Written here rather than taken from @fastify/type-provider-typebox because
// that one converts query strings with `Value.Convert`, which turns
// "9223372036854775807" into a rounded double and " 5" into 5. This one
// converts only exact decimal integers, and reports every problem with the
// field it concerns.
import { Kind, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { clip, type ErrorDetail } from '../errors.js'
import { Rule } from './kinds.js'

export type HttpPart = 'body' | 'querystring' | 'params' | 'headers'

/** Shaped as Fastify expects validation errors to be. */
export interface ValidationIssue {
  instancePath: string
  message: string
  keyword: string
  schemaPath: string
  params: Record<string, unknown>
}

export type ValidationResult = { value: unknown } | { error: ValidationIssue[] }

/** Plain decimal digits; the schema then checks the range. */
const DECIMAL = /^\d{1,100}$/

export function compileValidator (schema: TSchema, httpPart: HttpPart): (value: unknown) => ValidationResult {
  const check = TypeCompiler.Compile(schema)
  const integerFields = httpPart === 'body' ? new Map<string, 'Int64' | 'Integer'>() : integerProperties(schema)
  return (input) => {
    const value = integerFields.size === 0 ? input : convertIntegers(input, integerFields)
    if (check.Check(value)) return { value }
    const issues: ValidationIssue[] = []
    for (const error of check.Errors(value)) {
      issues.push({ instancePath: error.path, message: describe(error), keyword: ValueErrorType[error.type] ?? 'invalid', schemaPath: '', params: {} })
      if (issues.length >= 20) break
    }
    return { error: issues }
  }
}

/** Top-level properties of a query or path schema that hold integers. */
function integerProperties (schema: TSchema): Map<string, 'Int64' | 'Integer'> {
  const fields = new Map<string, 'Int64' | 'Integer'>()
  const properties = (schema.properties ?? {}) as Record<string, TSchema>
  for (const [name, property] of Object.entries(properties)) {
    if (property[Kind] === 'Int64' || property[Kind] === 'Integer') fields.set(name, property[Kind])
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

/** A sentence a client can act on, without TypeBox's internal wording. */
function describe (error: ValueError): string {
  const rule = (error.schema as unknown as Record<symbol, unknown>)[Rule]
  if (typeof rule === 'string') return rule
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not a known field'
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required'
    case ValueErrorType.Integer:
      return 'must be an integer'
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.IntegerMaximum:
      return `must be an integer from ${String(error.schema.minimum)} to ${String(error.schema.maximum)}`
    case ValueErrorType.Union:
      if (Array.isArray(error.schema.anyOf)) {
        const values = (error.schema.anyOf as TSchema[]).map((s) => s.const as unknown).filter((v) => v !== undefined)
        if (values.length > 0) return `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`
      }
      return error.message
    default:
      return error.message.replace(/^Expected/, 'must be')
  }
}

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
