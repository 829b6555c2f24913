// The admin API's schemas (docs/KEYS.md: The admin API): a key as operators see
// it, and what each operation takes. Written once: they validate requests,
// serialize answers, type the handlers and make the admin OpenAPI document.
import { Type, type Static, type TUnsafe } from './typebox.js'
import { KEY_SORTS, KEY_STATES, MATCHED_TOKENS, MAX_CONCURRENCY, MAX_OVERLAP_SECONDS, MAX_USAGE_DAYS, PLANS, SCOPES, type Scope } from '../domain.js'
import { INSTANT_FORMAT, INSTANT_RANGE, readInstant } from '../instant.js'
import { Check, Rule, StringEnum, Text } from './kinds.js'

export const DEFAULT_KEY_PAGE_SIZE = 20
const MAX_KEY_PAGE_SIZE = 100
/** As `petstore keys create --per-minute/--per-day`: up to ten digits. */
export const MAX_LIMIT = 9_999_999_999
/** Ids fit in a JavaScript number: keys are made one by one by operators. */
const MAX_KEY_ID = Number.MAX_SAFE_INTEGER

const DATE_TIME_RULE = `${INSTANT_FORMAT}, and ${INSTANT_RANGE.replace(/^must /, '')}`

/** A time in a request: RFC 3339, or null where `nullable`. */
function DateTime (options: { description: string, nullable?: boolean }): TUnsafe<string> {
  const nullable = options.nullable === true
  return Type.Unsafe<string>({
    type: nullable ? ['string', 'null'] : 'string',
    format: 'date-time',
    maxLength: 40,
    description: options.description,
    [Check]: (value: unknown) => (nullable && value === null) || (typeof value === 'string' && value.length <= 40 && readInstant(value).ok),
    [Rule]: nullable ? `${DATE_TIME_RULE}, or null` : DATE_TIME_RULE
  })
}

/**
 * An integer in a request body, or null where `nullable`. Bodies are parsed
 * without rounding (json.ts), so it arrives as a `bigint`; handlers take its
 * Number, safe within these bounds.
 */
export function BodyInteger (minimum: number, maximum: number, { nullable = false, ...options }: { description: string, format: 'int32' | 'int64', nullable?: boolean }): TUnsafe<bigint> {
  const rule = `must be an integer from ${minimum} to ${maximum}`
  return Type.Unsafe<bigint>({
    type: nullable ? ['integer', 'null'] : 'integer',
    minimum,
    maximum,
    ...options,
    [Check]: (value: unknown) => (nullable && value === null) || (typeof value === 'bigint' && value >= BigInt(minimum) && value <= BigInt(maximum)),
    [Rule]: nullable ? `${rule}, or null` : rule
  })
}

/** A limit in a request: a positive integer, or null (the plan's) where `nullable`. */
function Limit (description: string, nullable = false): TUnsafe<bigint> {
  return BodyInteger(1, MAX_LIMIT, { description, format: 'int64', nullable })
}

/** A key's own cap of requests in flight in a request, or null (the plan's) where `nullable`. */
function Concurrency (description: string, nullable = false): TUnsafe<bigint> {
  return BodyInteger(1, MAX_CONCURRENCY, { description, format: 'int32', nullable })
}

/** One or both scopes, each once. */
const ScopeList = Type.Unsafe<Scope[]>({
  type: 'array',
  items: { type: 'string', enum: [...SCOPES] },
  minItems: 1,
  maxItems: SCOPES.length,
  uniqueItems: true,
  description: 'What the key may do: `pets:read` (listPets, getPet), `pets:write` (createPet). Default: both.',
  [Check]: (value: unknown) => Array.isArray(value) && value.length >= 1 && value.length <= SCOPES.length &&
    new Set(value).size === value.length && value.every((scope) => (SCOPES as readonly unknown[]).includes(scope)),
  [Rule]: `must be a list of one or both of ${SCOPES.map((s) => `"${s}"`).join(', ')}, each once`
})

// Written from PLANS, as the schemas' CHECK constraints are tested against it (test/db/schema-sources.test.ts).
const planNames = PLANS.map((plan) => plan === 'enterprise' ? '`enterprise` (limits set on the key)' : `\`${plan}\``)
const Plan = StringEnum(PLANS, { description: `The plan whose limits apply: ${planNames.slice(0, -1).join(', ')}, or ${planNames.at(-1) ?? ''}.` })
const KeyName = Text({ maxLength: 200, description: 'A label for people, e.g. who the key is for.' })
const time = (description: string) => Type.String({ format: 'date-time', maxLength: 40, description })
const timeOrNull = (description: string) => Type.Union([time(description), Type.Null()], { description })

const KeyLeak = Type.Object({
  reportedAt: time('When the report arrived.'),
  report: Type.String({ maxLength: 71, pattern: '^(github:[0-9a-f]{64}|holder)$', description: 'Which report: `github:` and the SHA-256 of a secret scanner\'s report as it was sent (the same report sent again is the same), or `holder` when whoever held the token revoked it (`POST /v1/credentials/revoke`).' }),
  url: Type.Union([Type.String({ maxLength: 8192 }), Type.Null()], { description: 'Where the token was seen, as the report says (a commit\'s file, a gist); null when it says nothing.' }),
  source: Type.Union([Type.String({ maxLength: 200 }), Type.Null()], { description: 'Which kind of place, as the report says (`content`, `commit`, `npm`, …); null when it says nothing.' })
}, { additionalProperties: false, description: 'A token of the key found in public by a secret scanner, or given up by its holder.' })

export const Key = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: MAX_KEY_ID, format: 'int64', description: 'The key\'s id; it never changes, rolls included.' }),
  name: Type.String({ maxLength: 10_000, description: 'A label for people; empty when none was given.' }),
  plan: StringEnum(PLANS, { description: 'The plan whose limits apply.' }),
  perMinute: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, format: 'int64', description: 'Requests allowed per minute: the key\'s own, else its plan\'s.' }),
  perDay: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, format: 'int64', description: 'Requests allowed per UTC day: the key\'s own, else its plan\'s.' }),
  concurrency: Type.Integer({ minimum: 1, maximum: MAX_CONCURRENCY, format: 'int32', description: 'Requests allowed in flight at once: the key\'s own cap, else its plan\'s. One more waits a moment, then gets 429 `concurrency_limited`.' }),
  scopes: Type.Array(StringEnum(SCOPES), { minItems: 1, maxItems: SCOPES.length, uniqueItems: true, description: 'What the key may do.' }),
  environment: StringEnum(['production', 'staging'] as const, { description: 'Which service accepts it: `pet_live_…` tokens in production, `pet_test_…` in staging.' }),
  tokenHint: Type.String({ maxLength: 20, description: 'The current token\'s prefix and last four characters (`pet_live_…Wx3k`), to tell keys apart; never enough to use.' }),
  createdAt: time('When the key was made.'),
  expiresAt: timeOrNull('From this time on, the key\'s tokens are refused (401); null: never.'),
  lastUsedAt: timeOrNull('The last admitted request\'s time, written within about 10 seconds; null: never used, or not recorded yet.'),
  revoked: Type.Boolean({ description: 'Whether the key is revoked: both its tokens are refused.' }),
  revokedAt: timeOrNull('When the key was revoked; null: it is not.'),
  previousTokenExpiresAt: timeOrNull('While a roll\'s overlap runs, when the token before the current one stops working; null otherwise.'),
  leak: Type.Union([KeyLeak, Type.Null()], { description: 'The first report of one of the key\'s tokens found in public or given up by its holder (such a report revokes the key); null: none.' })
}, { $id: 'Key', additionalProperties: false, title: 'Key', description: 'An API key, never its token.' })
export type Key = Static<typeof Key>

export const KeyWithToken = Type.Object({
  ...Key.properties,
  token: Type.String({ minLength: 45, maxLength: 45, pattern: '^pet_(live|test)_[0-9A-Za-z]{36}$', description: 'The key\'s new token, shown only in this answer: store it now. Send it as `Authorization: Bearer <token>`.' })
}, { $id: 'KeyWithToken', additionalProperties: false, title: 'KeyWithToken', description: 'An API key and its new token.' })

export const FoundKey = Type.Object({
  ...Key.properties,
  matchedToken: StringEnum(MATCHED_TOKENS, {
    description: 'Which of the key\'s tokens was sent: `current`; `previous`, the one the last roll replaced, accepted until `previousTokenExpiresAt`; or `former`, one the key no longer accepts (rolled away from, or its overlap ended by revoking the key).'
  })
}, { $id: 'FoundKey', additionalProperties: false, title: 'FoundKey', description: 'An API key found by one of its tokens, never the token, and which of its tokens that is.' })

export const Keys = Type.Array(Key, { $id: 'Keys', maxItems: MAX_KEY_PAGE_SIZE, title: 'Keys', description: 'A page of keys, ordered by id.' })

export const NewKey = Type.Object({
  plan: Plan,
  name: Type.Optional(KeyName),
  perMinute: Type.Optional(Limit('Requests per minute; required for `enterprise`, and overrides the plan\'s otherwise.')),
  perDay: Type.Optional(Limit('Requests per UTC day; required for `enterprise`, and overrides the plan\'s otherwise.')),
  concurrency: Type.Optional(Concurrency('Requests in flight at once; default: the plan\'s, which follows the key\'s plan when it changes.')),
  scopes: Type.Optional(ScopeList),
  expiresAt: Type.Optional(DateTime({ description: 'When the key stops working, in the future; default: never.' }))
}, { $id: 'NewKey', additionalProperties: false, title: 'NewKey', description: 'A key to make.' })
export type NewKey = Static<typeof NewKey>

export const KeyChanges = Type.Object({
  name: Type.Optional(KeyName),
  plan: Type.Optional(Plan),
  perMinute: Type.Optional(Limit('Requests per minute; null: the plan\'s (not for `enterprise`).', true)),
  perDay: Type.Optional(Limit('Requests per UTC day; null: the plan\'s (not for `enterprise`).', true)),
  concurrency: Type.Optional(Concurrency('Requests in flight at once; null: the plan\'s, which follows the key\'s plan when it changes.', true)),
  scopes: Type.Optional(ScopeList),
  expiresAt: Type.Optional(DateTime({ description: 'When the key stops working, in the future; null: never.', nullable: true }))
}, { $id: 'KeyChanges', additionalProperties: false, title: 'KeyChanges', description: 'What to change on a key; a field left out keeps its value. Every instance applies the change within one second.' })
export type KeyChanges = Static<typeof KeyChanges>

export const RollRequest = Type.Object({
  expireCurrentInSeconds: BodyInteger(0, MAX_OVERLAP_SECONDS, {
    format: 'int32',
    description: 'How long the current token keeps working beside the new one, in seconds: 0 (refused at once) to 604800 (7 days). A token the key had before the current one stops at once.'
  })
}, { $id: 'RollRequest', additionalProperties: false, title: 'RollRequest', description: 'How to roll a key.' })

export const TokenLookup = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'A token the key has, or had before a roll, e.g. one a secret scanner found.' })
}, { $id: 'TokenLookup', additionalProperties: false, title: 'TokenLookup', description: 'A token whose key to find.' })

export const KeyIdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: MAX_KEY_ID, format: 'int64', description: 'The key\'s id.' })
}, { additionalProperties: false })

export const ListKeysQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_KEY_PAGE_SIZE, format: 'int32', default: DEFAULT_KEY_PAGE_SIZE, description: 'Maximum number of keys to return.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$', description: 'Where the page starts, opaque: copy it from the `Link: rel="next"` URL of the previous page, which keeps the same `q`, `state`, `plan` and `sort`. A cursor this service did not make, or made for another `sort`, is refused (400).' })),
  q: Type.Optional(Text({ maxLength: 200, description: 'Only keys whose name or token hint contains this text (case ignored), or whose id it is.' })),
  state: Type.Optional(StringEnum(KEY_STATES, { description: 'Only keys in this state: `active`, `expired` (its `expiresAt` has passed) or `revoked`.' })),
  plan: Type.Optional(StringEnum(PLANS, { description: 'Only keys on this plan.' })),
  sort: Type.Optional(StringEnum(KEY_SORTS, { default: 'id', description: '`id`: oldest key first. `lastUsed`: the most recently used first, never-used keys last.' }))
}, { additionalProperties: false })
export type ListKeysQuery = Static<typeof ListKeysQuery>

const DATE = (description: string) => Type.String({ minLength: 10, maxLength: 10, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description })
const COUNT = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description })

export const KeyUsageDays = Type.Array(Type.Object({
  date: Type.String({ format: 'date', maxLength: 10, description: 'The UTC day, `YYYY-MM-DD`.' }),
  admitted: COUNT('Requests served that day, whatever their status.'),
  refused: COUNT('Requests refused that day for the key\'s limit or ban (429).')
}, { additionalProperties: false }), {
  $id: 'KeyUsageDays',
  maxItems: MAX_USAGE_DAYS,
  title: 'KeyUsageDays',
  description: 'One row per UTC day, zeros included, oldest first. Each instance writes its counts at least every 10 seconds: the last few seconds may not be in it yet.'
})

export const UsageQuery = Type.Object({
  from: Type.Optional(DATE('The first day, `YYYY-MM-DD` (UTC); default: 29 days before `to`.')),
  to: Type.Optional(DATE('The last day, `YYYY-MM-DD` (UTC), included; default: today. At most 366 days after `from`.'))
}, { additionalProperties: false })
