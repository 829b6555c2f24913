// The admin API's view of the deprecated operations' callers (docs/OPERATING.md:
// The deprecated operation's callers). No `$id`: written out where its one
// operation uses it in the admin OpenAPI document.
import { Type } from './typebox.js'
import { DEPRECATED_OPERATIONS } from '../deprecations.js'
import { MAX_CALLERS } from '../domain.js'
import { Key } from './key.js'

const INSTANT = (description: string) => Type.String({ format: 'date-time', maxLength: 30, description })

export const DeprecatedOperations = Type.Array(Type.Object({
  operationId: Type.String({ maxLength: 100, description: 'The operation, as the public OpenAPI document names it.' }),
  sunset: INSTANT('When the operation stops working and answers 410 for good.'),
  callerCount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description: `How many keys called the operation in the last 30 UTC days; \`callers\` lists the first ${MAX_CALLERS} of them.` }),
  callers: Type.Array(Type.Object({
    key: Key,
    calls: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description: 'The key\'s calls of the operation over the last 30 UTC days, today included, that reached it (whatever they answered; not those refused before it, such as 401, 403, 429 or 400).' }),
    lastCall: INSTANT('The key\'s last call of the operation.')
  }, { additionalProperties: false }), { maxItems: MAX_CALLERS, description: `The keys that called the operation in the last 30 UTC days, today included, revoked ones too: most calls first, then by id; at most ${MAX_CALLERS}.` })
}, { additionalProperties: false }), {
  maxItems: DEPRECATED_OPERATIONS.length,
  title: 'DeprecatedOperations',
  description: 'Every deprecated operation, with its sunset and the keys that still call it. Counts are written by each instance at least every 10 seconds.'
})
