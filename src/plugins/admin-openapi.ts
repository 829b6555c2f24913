// The admin API's own OpenAPI 3.1 document (/admin/v1/openapi.json), built as
// plugins/openapi.ts builds the public one. Registered after the token check:
// no secret, but the admin API serves nothing to whoever lacks the token.
import fp from 'fastify-plugin'
import { ADMIN_REQUESTS_PER_MINUTE } from './admin-auth.js'
import swagger from '@fastify/swagger'
import { stringify } from 'lossless-json'
import { EVENT_TYPES, TEST_EVENT_TYPE, type Environment } from '../domain.js'
import { AdminErrorBody } from '../schemas/error.js'
import { QuotaEventData, WebhookTestData } from '../schemas/event.js'
import type { JsonSchema } from '../schemas/kinds.js'
import { FoundKey, Key, KeyChanges, KeyUsageDays, KeyWithToken, Keys, NewKey, RollRequest, TokenLookup } from '../schemas/key.js'
import { Deliveries, Delivery, NewWebhook, RollWebhookSecret, Webhook, WebhookChanges, WebhookWithSecret, Webhooks } from '../schemas/webhook.js'
import { Pet, PetStatus } from '../schemas/pet.js'
import { EVENTS_TAG, documentOptions, exactBounds } from './openapi.js'

/** The named schemas; each one's `$id` is its name under `components.schemas`. */
const SCHEMAS: JsonSchema[] = [
  Key, KeyWithToken, FoundKey, Keys, NewKey, KeyChanges, RollRequest, TokenLookup, KeyUsageDays,
  Webhook, WebhookWithSecret, Webhooks, NewWebhook, WebhookChanges, RollWebhookSecret, Delivery, Deliveries, AdminErrorBody,
  // What the events carry besides the Key: operators' endpoints may be given every type.
  Pet, PetStatus, QuotaEventData, WebhookTestData
]

export const ADMIN_PREFIX = '/admin/v1'

/**
 * Relative to the document's own address: the admin listener is reached by
 * whatever address the operators' network gives it (often 0.0.0.0 in a
 * container), which the instance cannot know. Links (`rel="next"`) are
 * relative for the same reason. Internal: for the operators alone.
 */
const serversOf = (environment: Environment): Array<{ url: string, description: string, 'x-internal': boolean }> => [{
  url: ADMIN_PREFIX,
  description: `The admin listener this document was read from, of the ${environment} service, for its operators only`,
  'x-internal': true
}]

export default fp<{ environment: Environment }>(async function adminOpenapi (app, { environment }) {
  await app.register(swagger, documentOptions({
    title: 'Animal Adoption Store: admin API',
    description: `Make, change, roll, revoke and trace the API keys of the Animal Adoption Store, and manage the endpoints its events are delivered to. Served on the operators' admin listener only, never on the public port. Every operation needs the admin token, sent as \`Authorization: Bearer <ADMIN_TOKEN>\`; wrong tokens are limited per address. Requests with the admin token are rate limited too, generously (${ADMIN_REQUESTS_PER_MINUTE} a minute per address): see the \`X-RateLimit-*\` headers, and wait for \`Retry-After\` after a 429.`,
    servers: serversOf(environment),
    tags: [
      { name: 'keys', description: 'API keys: their plans, limits, scopes, expiry and tokens.' },
      { name: 'webhooks', description: 'Webhook endpoints: where events are delivered, signed, and which.' },
      EVENTS_TAG
    ],
    security: { name: 'adminToken', description: 'The service\'s `ADMIN_TOKEN`, at least 32 characters.' },
    schemas: SCHEMAS,
    webhooks: [...EVENT_TYPES, TEST_EVENT_TYPE]
  }))

  let text: string | undefined
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    // The events' Pet has int64 bounds past 2^53, written exactly as in the public document.
    text ??= stringify(exactBounds(app.swagger())) ?? '{}'
    return reply.type('application/json').send(text)
  })
}, { name: 'admin-openapi' })
