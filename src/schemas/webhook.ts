// The admin API's webhook endpoints (docs/WEBHOOKS.md): an endpoint as
// operators see it, and what each operation takes. Written once: they
// validate requests, serialize answers, type the handlers and make the
// admin OpenAPI document.
import { Type, type Static, type TUnsafe } from './typebox.js'
import { EVENT_TYPES, MAX_OVERLAP_SECONDS, TEST_EVENT_TYPE, type EventType } from '../domain.js'
import { BodyInteger } from './key.js'
import { Check, Rule, Text } from './kinds.js'

export const DEFAULT_WEBHOOK_PAGE_SIZE = 20
const MAX_WEBHOOK_PAGE_SIZE = 100
/** Ids fit in a JavaScript number: endpoints are made one by one by operators. */
const MAX_WEBHOOK_ID = Number.MAX_SAFE_INTEGER
/** Longer URLs are refused by many receivers' servers anyway. */
const MAX_WEBHOOK_URL_LENGTH = 2000

const TYPES_RULE = `must be a list of 1 to ${EVENT_TYPES.length} of ${EVENT_TYPES.map((t) => `"${t}"`).join(', ')}, each once`

/** One or more event types, each once; null where `nullable` (every type). */
function EventList (description: string, nullable: boolean): TUnsafe<EventType[]> {
  return Type.Unsafe<EventType[]>({
    type: nullable ? ['array', 'null'] : 'array',
    items: { type: 'string', enum: [...EVENT_TYPES] },
    minItems: 1,
    maxItems: EVENT_TYPES.length,
    uniqueItems: true,
    description,
    [Check]: (value: unknown) => (nullable && value === null) || (Array.isArray(value) && value.length >= 1 &&
      value.length <= EVENT_TYPES.length && new Set(value).size === value.length &&
      value.every((type) => (EVENT_TYPES as readonly unknown[]).includes(type))),
    [Rule]: nullable ? `${TYPES_RULE}, or null` : TYPES_RULE
  })
}

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  description: 'Where deliveries are POSTed: an `https://` URL of a public address, without credentials in it (`http://` and private addresses only where the service allows them).'
})
const Description = Text({ maxLength: 500, description: 'A note for people, e.g. who receives these events.' })
const time = (description: string) => Type.String({ format: 'date-time', maxLength: 40, description })

export const Webhook = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_ID, format: 'int64', description: 'The endpoint\'s id.' }),
  url: Type.String({ maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'Where deliveries are POSTed.' }),
  events: Type.Union([
    Type.Array(Type.String({ enum: [...EVENT_TYPES], maxLength: 40 }), { maxItems: EVENT_TYPES.length }),
    Type.Null()
  ], { description: 'The event types delivered here; null: every type, those added later too.' }),
  description: Type.String({ maxLength: 10_000, description: 'A note for people; empty when none was given.' }),
  enabled: Type.Boolean({ description: 'Whether events are delivered here. A disabled endpoint is given no new events, and its pending deliveries wait.' }),
  previousSecretExpiresAt: Type.Union([time('When the secret before the last roll stops signing.'), Type.Null()], {
    description: 'While a roll\'s overlap runs, when the secret before it stops signing deliveries (each carries a signature of both until then); null otherwise.'
  }),
  disabledReason: Type.Union([Type.String({ maxLength: 200 }), Type.Null()], {
    description: 'Why the service disabled the endpoint: every delivery to it failed for 5 days. Null unless it did; setting `enabled` clears it.'
  }),
  disabledAt: Type.Union([time('When the service disabled the endpoint.'), Type.Null()], { description: 'When the service disabled the endpoint; null unless it did.' }),
  createdAt: time('When the endpoint was made.'),
  updatedAt: time('When the endpoint was last changed.')
}, { $id: 'Webhook', additionalProperties: false, title: 'Webhook', description: 'A webhook endpoint, never its secret.' })
export type Webhook = Static<typeof Webhook>

export const WebhookWithSecret = Type.Object({
  ...Webhook.properties,
  secret: Type.String({
    minLength: 38,
    maxLength: 100,
    pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
    description: 'The signing secret, shown only in this answer: store it now. Give it to the receiver\'s Standard Webhooks library to verify `webhook-signature`.'
  })
}, { $id: 'WebhookWithSecret', additionalProperties: false, title: 'WebhookWithSecret', description: 'A webhook endpoint and its signing secret.' })

export const Webhooks = Type.Array(Webhook, { $id: 'Webhooks', maxItems: MAX_WEBHOOK_PAGE_SIZE, title: 'Webhooks', description: 'A page of webhook endpoints, oldest first.' })

export const NewWebhook = Type.Object({
  url: Url,
  events: Type.Optional(EventList('The event types to deliver; left out: every type, those added later too.', false)),
  description: Type.Optional(Description)
}, { $id: 'NewWebhook', additionalProperties: false, title: 'NewWebhook', description: 'A webhook endpoint to make.' })
export type NewWebhook = Static<typeof NewWebhook>

export const WebhookChanges = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(EventList('The event types to deliver; null: every type.', true)),
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Unsafe<boolean>({
    type: 'boolean',
    description: 'false: no new events are given to the endpoint, and its pending deliveries wait; true: they go on.',
    [Check]: (value: unknown) => typeof value === 'boolean',
    [Rule]: 'must be true or false'
  }))
}, { $id: 'WebhookChanges', additionalProperties: false, title: 'WebhookChanges', description: 'What to change on a webhook endpoint; a field left out keeps its value.' })
export type WebhookChanges = Static<typeof WebhookChanges>

export const RollWebhookSecret = Type.Object({
  expireCurrentInSeconds: BodyInteger(0, MAX_OVERLAP_SECONDS, {
    format: 'int32',
    description: 'How long the current secret keeps signing beside the new one, in seconds: 0 (it stops at once) to 604800 (7 days). A secret from before the current one stops at once.'
  })
}, { $id: 'RollWebhookSecret', additionalProperties: false, title: 'RollWebhookSecret', description: 'How to roll an endpoint\'s signing secret.' })
export type RollWebhookSecret = Static<typeof RollWebhookSecret>

export const WebhookIdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_ID, format: 'int64', description: 'The endpoint\'s id.' })
}, { additionalProperties: false })

export const ListWebhooksQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_PAGE_SIZE, format: 'int32', default: DEFAULT_WEBHOOK_PAGE_SIZE, description: 'Maximum number of endpoints to return.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 16, pattern: '^[0-9]+$', description: 'Where the page starts: copy it from the `Link: rel="next"` URL of the previous page.' }))
}, { additionalProperties: false })
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>

export const Delivery = Type.Object({
  webhookId: Type.String({ maxLength: 30, pattern: '^evt_[0-9]+$', description: 'The event\'s id, as sent in the `webhook-id` header.' }),
  type: Type.String({ enum: [...EVENT_TYPES, TEST_EVENT_TYPE], maxLength: 40, description: 'The event\'s type; `webhook.test` for a test event an operator sent.' }),
  eventCreatedAt: time('When the event was made.'),
  state: Type.String({ enum: ['pending', 'succeeded', 'failed'], maxLength: 10, description: '`pending`: to be tried (again); `succeeded`: a 2xx came back; `failed`: a final answer, or retries given up.' }),
  attempts: Type.Integer({ minimum: 0, maximum: 1_000_000, format: 'int32', description: 'Attempts made so far.' }),
  lastStatus: Type.Union([Type.Integer({ minimum: 100, maximum: 999, format: 'int32' }), Type.Null()], { description: 'The last attempt\'s HTTP status; null: none came back.' }),
  lastError: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()], { description: 'Why the last attempt failed, with the start of the answer; null after a success.' }),
  nextAttemptAt: Type.Union([time('When it is tried next.'), Type.Null()], { description: 'When it is tried next; null once it succeeded or failed.' })
}, { $id: 'Delivery', additionalProperties: false, title: 'Delivery', description: 'One event\'s delivery to one endpoint.' })

export const Deliveries = Type.Array(Delivery, { $id: 'Deliveries', maxItems: MAX_WEBHOOK_PAGE_SIZE, title: 'Deliveries', description: 'A page of an endpoint\'s deliveries, newest event first.' })

export const DeliveryParams = Type.Object({
  id: WebhookIdParams.properties.id,
  eventId: Type.String({ minLength: 5, maxLength: 23, pattern: '^evt_[0-9]{1,19}$', description: 'The event\'s id, as its `webhook-id` header and the deliveries list have it: `evt_` and a number.' })
}, { additionalProperties: false })

export const ListDeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_PAGE_SIZE, format: 'int32', default: DEFAULT_WEBHOOK_PAGE_SIZE, description: 'Maximum number of deliveries to return.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 19, pattern: '^[0-9]+$', description: 'Where the page starts: copy it from the `Link: rel="next"` URL of the previous page.' }))
}, { additionalProperties: false })
