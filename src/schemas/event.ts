// The events delivered to webhook endpoints (docs/WEBHOOKS.md): the body of
// each type, `{type, timestamp, data}`. Written once, they make the
// `webhooks` of both OpenAPI documents (plugins/openapi.ts), and through the
// public one the typed client's events. `data` refers to the schemas the APIs
// already answer with (Pet, Key), so that an event says what the API says.
import { Type } from './typebox.js'
import { TEST_EVENT_TYPE, type EventType } from '../domain.js'
import { Key, MAX_LIMIT } from './key.js'
import type { JsonSchema } from './kinds.js'
import { Pet } from './pet.js'
import type { Header } from './responses.js'

/** Every type a delivery can carry: those endpoints ask for, and the test an operator sends. */
export type DeliveredType = EventType | typeof TEST_EVENT_TYPE

const DAY = Type.String({ format: 'date', minLength: 10, maxLength: 10, description: 'The UTC day whose quota it is, `YYYY-MM-DD`.' })

export const QuotaEventData = Type.Object({
  key: Key,
  day: DAY,
  limit: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, format: 'int64', description: 'The key\'s daily limit that day.' }),
  used: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description: 'The requests counted that day when the level was seen; it may be above the level\'s exact number.' })
}, { $id: 'QuotaEventData', additionalProperties: false, title: 'QuotaEventData', description: 'A key\'s daily quota at a level: the key as the admin API shows it, the day, its limit and its use.' })

export const WebhookTestData = Type.Object({
  endpointId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description: 'The endpoint the test was sent to.' }),
  message: Type.String({ maxLength: 200, description: 'Says that the event announces no change.' })
}, { $id: 'WebhookTestData', additionalProperties: false, title: 'WebhookTestData', description: 'A test an operator sent to one endpoint: answer it 2xx, and otherwise ignore it.' })

/**
 * The headers every delivery carries (Standard Webhooks), as parameters of
 * each webhook's operation: a receiver verifies the signature with them.
 */
export const WEBHOOK_HEADERS: Header[] = [
  {
    name: 'webhook-id',
    schema: Type.String({ maxLength: 23, pattern: '^evt_[0-9]{1,19}$', description: 'The event\'s id, `evt_` and a number: the same on every attempt of the event. De-duplicate by it: delivery is at least once.' })
  },
  {
    name: 'webhook-timestamp',
    schema: Type.String({ maxLength: 20, pattern: '^[0-9]+$', description: 'When this attempt was signed, in Unix seconds. Refuse one far from your clock (the Standard Webhooks libraries allow 5 minutes): an old delivery replayed.' })
  },
  {
    name: 'webhook-signature',
    schema: Type.String({ maxLength: 1000, pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$', description: '`v1,` and the base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` with the endpoint\'s secret; two, space-separated, while a rolled secret\'s overlap runs. Verify it on the body as it came, before parsing it.' })
  }
]

/** `pet.created` → `PetCreatedEvent`: the name of a type's body under `components.schemas`. */
export function eventSchemaName (type: DeliveredType): string {
  return `${type.split('.').map((word) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`).join('')}Event`
}

/** What each type's `data` is, and when the type is sent: the table of docs/WEBHOOKS.md. */
const EVENTS: Record<DeliveredType, { data: JsonSchema, description: string }> = {
  'pet.created': { data: Pet, description: 'An animal was added: the Pet, as `POST /v1/pets` answered it.' },
  'key.created': { data: Key, description: 'A key was made: the key, as the admin API shows it.' },
  'key.updated': { data: Key, description: 'A key was changed (a change that changed something): the key after the change.' },
  'key.rolled': { data: Key, description: 'A key\'s token was rolled: the key after the roll.' },
  'key.revoked': { data: Key, description: 'A key was revoked: the key, revoked.' },
  'key.expiring': { data: Key, description: 'A key\'s expiry is less than 7 days ahead: the key, when the event was made. Once per key and expiry.' },
  'key.expired': { data: Key, description: 'A key\'s expiry came; its tokens are refused from then on: the key, when the event was made. Once per key and expiry.' },
  'key.leaked': { data: Key, description: 'A key was revoked by a report of its token found in public, or by its holder: the key, revoked, its `leak` that report. Sent beside a `key.revoked` of the same data.' },
  'quota.warning': { data: QuotaEventData, description: 'A key\'s use reached 80 % of its daily limit. Once per key and UTC day.' },
  'quota.exhausted': { data: QuotaEventData, description: 'A key\'s use reached its daily limit. Once per key and UTC day.' },
  [TEST_EVENT_TYPE]: { data: WebhookTestData, description: 'A test an operator sent to this endpoint alone; it announces no change.' }
}

/** The body of one event type: `{type, timestamp, data}`, named after the type (`PetCreatedEvent`). */
export function eventSchema (type: DeliveredType): JsonSchema {
  const { data, description } = EVENTS[type]
  const name = eventSchemaName(type)
  return Type.Object({
    type: Type.Literal(type, { description: 'The event\'s type.' }),
    timestamp: Type.String({ format: 'date-time', maxLength: 40, description: 'When the change was made (RFC 3339, UTC); the same on every attempt.' }),
    data
  }, { $id: name, additionalProperties: false, title: name, description })
}
