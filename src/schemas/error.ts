import { Type } from './typebox.js'
import { codesFor, type Audience } from '../errors.js'

/** The Error body, with the codes one audience may be answered: the public API's document lists none of the admin API's. */
function errorBodyFor (audience: Audience) {
  return Type.Object({
    code: Type.String({ maxLength: 64, description: 'Machine-readable error code.', enum: codesFor(audience) }),
    message: Type.String({ maxLength: 2000, description: 'Human-readable description.' }),
    status: Type.Integer({ minimum: 100, maximum: 599, format: 'int32', description: 'The HTTP status code, repeated.' }),
    details: Type.Optional(Type.Array(Type.Object({
      field: Type.String({ maxLength: 200, pattern: '^(body|query|path|header)(\\.|$)', description: 'Where the problem is: `body.name`, `query.limit`, `header.idempotency-key`, … An unknown field is named as sent (cut after 200 characters), with `~` and `/` written `~0` and `~1`.' }),
      reason: Type.String({ maxLength: 1000, description: 'What is wrong with it.' })
    }, { additionalProperties: false }), { maxItems: 50, description: 'One entry per problem found in the request.' }))
  }, { $id: 'Error', additionalProperties: false, description: 'What went wrong.' })
}

export const ErrorBody = errorBodyFor('api')
export const AdminErrorBody = errorBodyFor('admin')
