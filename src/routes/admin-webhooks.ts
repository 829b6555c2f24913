// The admin API's webhook endpoints (docs/WEBHOOKS.md: Managing endpoints).
// The admin token has been checked and the request validated before a
// handler runs; handlers call webhooks/manage.ts and shape the answer; its
// refusals become the admin API's errors in plugins/errors.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchema } from 'fastify'
import { Type } from '../schemas/typebox.js'
import type { WebhookStore } from '../db/storage.js'
import { ADMIN_PREFIX } from '../plugins/admin-openapi.js'
import { adminAnswers } from '../schemas/responses.js'
import {
  DEFAULT_WEBHOOK_PAGE_SIZE, Deliveries, Delivery, DeliveryParams, ListDeliveriesQuery, RollWebhookSecret, ListWebhooksQuery, NewWebhook, Webhook, WebhookChanges, WebhookIdParams, WebhookWithSecret, Webhooks
} from '../schemas/webhook.js'
import {
  createWebhook, deleteWebhook, listDeliveries, listWebhooks, resendDelivery, rollWebhookSecret, sendTestEvent, showWebhook, updateWebhook, type WebhookPolicy
} from '../webhooks/manage.js'
import { ALWAYS } from './admin-keys.js'

interface AdminWebhookRoutesOptions {
  storage: WebhookStore
  policy: WebhookPolicy
  now: () => number
}

const WITH_BODY = [...ALWAYS, 400, 413, 415]

const NEXT_DELIVERIES = {
  Link: Type.String({ maxLength: 3000, pattern: '^<[^<>\\s]+>; *rel="next"$', description: 'Present when older deliveries follow: `</admin/v1/webhooks/{id}/deliveries?limit=…&cursor=…>; rel="next"`, relative to this listener.' })
}

const NEXT_WEBHOOKS = {
  Link: Type.String({ maxLength: 3000, pattern: '^<[^<>\\s]+>; *rel="next"$', description: 'Present when more endpoints follow: `</admin/v1/webhooks?limit=…&cursor=…>; rel="next"`, the next page, relative to this listener.' })
}

function webhooksOperation<S extends FastifySchema> (schema: S): S & { tags: string[] } {
  return { ...schema, tags: ['webhooks'] }
}

function oneWebhookOperation<S extends FastifySchema> (schema: S): S & { tags: string[], params: typeof WebhookIdParams } {
  return { ...webhooksOperation(schema), params: WebhookIdParams }
}

const adminWebhookRoutes: FastifyPluginAsyncTypebox<AdminWebhookRoutesOptions> = async (app, { storage, policy, now }) => {
  app.post('/webhooks', {
    schema: webhooksOperation({
      operationId: 'createWebhook',
      summary: 'Make a webhook endpoint',
      description: 'Events of the types asked for (all when `events` is left out) are POSTed to the URL, signed as the Standard Webhooks specification says. The signing secret is in this answer only: store it now.',
      body: NewWebhook,
      response: adminAnswers(201, WebhookWithSecret, 'The endpoint, and its signing secret.', WITH_BODY)
    })
  }, async (request, reply) => {
    const { url, events, description } = request.body
    const webhook = await createWebhook(storage, { url, events, description, now: now() }, policy)
    return reply.code(201).send(webhook)
  })

  app.get('/webhooks', {
    schema: webhooksOperation({
      operationId: 'listWebhooks',
      summary: 'List webhook endpoints',
      description: 'Every endpoint, oldest first. When more follow, the `Link` header has the URL of the next page.',
      querystring: ListWebhooksQuery,
      response: adminAnswers(200, Webhooks, 'A page of endpoints.', [...ALWAYS, 400], NEXT_WEBHOOKS)
    })
  }, async (request, reply) => {
    const { limit = DEFAULT_WEBHOOK_PAGE_SIZE, cursor } = request.query
    // One more than the page: it says whether another follows.
    const webhooks = await listWebhooks(storage, cursor === undefined ? 0 : Number(cursor), limit + 1)
    if (webhooks.length <= limit) return webhooks
    const page = webhooks.slice(0, limit)
    reply.header('link', `<${ADMIN_PREFIX}/webhooks?limit=${limit}&cursor=${page[page.length - 1]?.id ?? 0}>; rel="next"`)
    return page
  })

  app.get('/webhooks/:id', {
    schema: oneWebhookOperation({
      operationId: 'getWebhook',
      summary: 'Get a webhook endpoint',
      response: adminAnswers(200, Webhook, 'The endpoint.', [...ALWAYS, 400, 404])
    })
  }, async (request) => await showWebhook(storage, request.params.id))

  app.patch('/webhooks/:id', {
    schema: oneWebhookOperation({
      operationId: 'updateWebhook',
      summary: 'Change a webhook endpoint',
      description: 'Changes the fields sent. `enabled: false` stops deliveries to the endpoint: it is given no new events, and its pending deliveries wait until it is enabled again.',
      body: WebhookChanges,
      response: adminAnswers(200, Webhook, 'The endpoint as changed.', [...WITH_BODY, 404])
    })
  }, async (request) => await updateWebhook(storage, request.params.id, request.body, now(), policy))

  app.get('/webhooks/:id/deliveries', {
    schema: oneWebhookOperation({
      operationId: 'listWebhookDeliveries',
      summary: 'An endpoint\'s deliveries',
      description: 'The endpoint\'s deliveries, newest event first: each event\'s webhook-id and type, the delivery\'s state, its attempts, the last status and error, and when it is tried next. Delivered and failed events are kept for 7 days.',
      querystring: ListDeliveriesQuery,
      response: adminAnswers(200, Deliveries, 'A page of deliveries.', [...ALWAYS, 400, 404], NEXT_DELIVERIES)
    })
  }, async (request, reply) => {
    const { limit = DEFAULT_WEBHOOK_PAGE_SIZE, cursor } = request.query
    const { id } = request.params
    const deliveries = await listDeliveries(storage, id, cursor === undefined ? null : BigInt(cursor), limit + 1)
    if (deliveries.length <= limit) return deliveries
    const page = deliveries.slice(0, limit)
    reply.header('link', `<${ADMIN_PREFIX}/webhooks/${id}/deliveries?limit=${limit}&cursor=${page[page.length - 1]?.webhookId.slice(4) ?? ''}>; rel="next"`)
    return page
  })

  app.post('/webhooks/:id/deliveries/:eventId/resend', {
    schema: webhooksOperation({
      operationId: 'resendWebhookDelivery',
      summary: 'Send a delivery again',
      description: 'Sends a succeeded or failed delivery again, due now, as a new attempt of the same `webhook-id` (receivers that de-duplicate see it as the same event). A failure is retried as usual within the three days after the event; past them, this attempt is the only one. A disabled endpoint\'s resend waits until it is enabled. A pending delivery is refused (409 `delivery_pending`): it will be tried anyway.',
      params: DeliveryParams,
      // Content sent with it is read as any body (400, 413, 415), then ignored.
      response: adminAnswers(202, Delivery, 'The delivery, pending again.', [...WITH_BODY, 404, 409])
    })
  }, async (request, reply) => {
    const { id, eventId } = request.params
    return reply.code(202).send(await resendDelivery(storage, id, eventId, now()))
  })

  app.post('/webhooks/:id/roll-secret', {
    schema: oneWebhookOperation({
      operationId: 'rollWebhookSecret',
      summary: 'Roll an endpoint\'s signing secret',
      description: 'Gives the endpoint a new signing secret, in this answer only. Until `expireCurrentInSeconds` have passed, each delivery carries a signature of the new secret and one of the current, space-separated in `webhook-signature`, so that a receiver holding either verifies; give the receiver the new one within that time. A secret from before the current one stops at once.',
      body: RollWebhookSecret,
      response: adminAnswers(201, WebhookWithSecret, 'The endpoint, and its new signing secret.', [...WITH_BODY, 404])
    })
  }, async (request, reply) => reply.code(201).send(await rollWebhookSecret(storage, request.params.id, Number(request.body.expireCurrentInSeconds), now())))

  app.post('/webhooks/:id/test', {
    schema: oneWebhookOperation({
      operationId: 'testWebhook',
      summary: 'Send a test event',
      description: 'Writes a `webhook.test` event for this endpoint alone and delivers it as any event (signed, retried): `data` is `{endpointId, message}`. It is sent whatever types the endpoint asked for, never to another endpoint; a disabled endpoint\'s waits until it is enabled. Its outcome is in the endpoint\'s deliveries.',
      response: adminAnswers(202, Delivery, 'The test event\'s delivery, pending.', [...WITH_BODY, 404])
    })
  }, async (request, reply) => reply.code(202).send(await sendTestEvent(storage, request.params.id, now())))

  app.delete('/webhooks/:id', {
    schema: oneWebhookOperation({
      operationId: 'deleteWebhook',
      summary: 'Remove a webhook endpoint',
      description: 'Removes the endpoint and its deliveries, pending ones too.',
      // Content sent with a DELETE is read as any body (400, 413, 415), then ignored.
      response: adminAnswers(200, Webhook, 'The endpoint, removed.', [...WITH_BODY, 404])
    })
  }, async (request) => await deleteWebhook(storage, request.params.id))
}

export default adminWebhookRoutes
