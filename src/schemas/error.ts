import { Type } from 'typebox'
import { ERROR_CODES } from '../errors.js'

export const ErrorBody = Type.Object({
  code: Type.String({ maxLength: 64, description: 'Machine-readable error code.', enum: Object.keys(ERROR_CODES) }),
  message: Type.String({ maxLength: 2000, description: 'Human-readable description.' }),
  status: Type.Integer({ minimum: 100, maximum: 599, format: 'int32', description: 'The HTTP status code, repeated.' }),
  details: Type.Optional(Type.Array(Type.Object({
    field: Type.String({ maxLength: 200, pattern: '^(body|query|path|header)(\\.|$)', description: 'Where the problem is: `body.name`, `query.limit`, `header.idempotency-key`, … An unknown field is named as sent (cut after 200 characters), with `~` and `/` written `~0` and `~1`.' }),
    reason: Type.String({ maxLength: 1000, description: 'What is wrong with it.' })
  }, { additionalProperties: false }), { maxItems: 50, description: 'One entry per problem found in the request.' }))
}, { $id: 'Error', additionalProperties: false, description: 'What went wrong.' })
