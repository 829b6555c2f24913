// The admin API's schemas for many keys at once (docs/KEYS.md: The console): the
// overview the operator console opens on. No `$id`: each is written out
// where its one operation uses it in the admin OpenAPI document.
import { Type } from './typebox.js'
import { EVENT_TYPES, KEY_STATES, MAX_OVERLAP_SECONDS, PLANS, SCOPES, SUGGESTED_OVERLAPS } from '../domain.js'
import { Key, MAX_LIMIT } from './key.js'
import { StringEnum } from './kinds.js'

const COUNT = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description })
const LIMIT = (description: string) => Type.Union([Type.Integer({ minimum: 1, maximum: MAX_LIMIT, format: 'int64' }), Type.Null()], { description })
const OVERLAP = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_OVERLAP_SECONDS, format: 'int32', description })

const Day = Type.Object({
  date: Type.String({ format: 'date', maxLength: 10, description: 'The UTC day, `YYYY-MM-DD`.' }),
  admitted: COUNT('Requests of every key served that day, whatever their status.'),
  refused: COUNT('Requests of every key refused that day for a limit or ban (429).')
}, { additionalProperties: false })

const countsOf = (names: readonly string[], what: string) => Type.Object(
  Object.fromEntries(names.map((name) => [name, COUNT(`Keys ${what} \`${name}\`.`)])),
  { additionalProperties: false, description: `The number of keys of each ${what.split(' ').at(-1) ?? ''}.` })

export const Overview = Type.Object({
  today: Type.String({ format: 'date', maxLength: 10, description: 'Today\'s UTC date: the day `busiest` counts.' }),
  usage: Type.Array(Day, { minItems: 30, maxItems: 30, description: 'Every key\'s requests per UTC day over the last 30 days, today included, zeros included, oldest first.' }),
  busiest: Type.Array(Type.Object({
    key: Key,
    admitted: COUNT('The key\'s requests served today.'),
    refused: COUNT('The key\'s requests refused today (429).')
  }, { additionalProperties: false }), { maxItems: 10, description: 'The keys with the most requests today (admitted and refused), most first; at most 10.' }),
  keys: Type.Object({
    total: COUNT('Every key, revoked and expired ones too.'),
    byState: countsOf(KEY_STATES, 'in the state'),
    byPlan: countsOf(PLANS, 'on the plan'),
    leaked: COUNT('Keys a token of which was reported found in public, or given up by its holder; each such key is revoked.')
  }, { additionalProperties: false, description: 'How many keys there are, by state and by plan.' }),
  choices: Type.Object({
    plans: Type.Array(Type.Object({
      plan: StringEnum(PLANS, { description: 'A plan.' }),
      perMinute: LIMIT('The plan\'s requests per minute; null: set on each key (`enterprise`).'),
      perDay: LIMIT('The plan\'s requests per UTC day; null: set on each key (`enterprise`).')
    }, { additionalProperties: false }), { maxItems: PLANS.length, description: 'The plans a key may have, and their limits.' }),
    scopes: Type.Array(StringEnum(SCOPES), { maxItems: SCOPES.length, description: 'The scopes a key may have.' }),
    overlap: Type.Object({
      maxSeconds: OVERLAP('The longest overlap a roll may give the current token.'),
      defaultSeconds: OVERLAP('The overlap a person is offered first when rolling a key.'),
      suggestedSeconds: Type.Array(OVERLAP('An overlap.'), { maxItems: SUGGESTED_OVERLAPS.length, description: 'Overlaps worth offering, 0 (the current token stops at once) among them.' })
    }, { additionalProperties: false, description: 'How long a roll may let the current token keep working (`POST /keys/{id}/roll`), and a webhook endpoint\'s current secret keep signing (`POST /webhooks/{id}/roll-secret`).' }),
    eventTypes: Type.Array(StringEnum(EVENT_TYPES), { maxItems: EVENT_TYPES.length, description: 'The event types a webhook endpoint may ask for.' })
  }, { additionalProperties: false, description: 'What a key or a webhook endpoint may be given, for forms to offer.' })
}, { additionalProperties: false, title: 'Overview', description: 'Every key at a glance: requests per day, the busiest keys today, keys by state and plan, and what a key may be given.' })
