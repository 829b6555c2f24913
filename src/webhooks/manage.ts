// Webhook endpoints (docs/WEBHOOKS.md: Managing endpoints): making, reading,
// changing and removing them, as plain functions over the storage, for the
// admin API (and later the command line) to call. Each rule is checked here.
import { randomBytes } from 'node:crypto'
import type { DeliveryRecord, NewWebhookRecord, WebhookChanges, WebhookRecord, WebhookStore } from '../db/storage.js'
import { TEST_EVENT_TYPE, type EventType } from '../domain.js'
import { isPublicAddress, literalAddress } from './addresses.js'
import { webhookId } from './deliver.js'

/** An endpoint as operators see it; times are RFC 3339 strings in UTC. */
export interface WebhookView {
  id: number
  url: string
  events: EventType[] | null
  description: string
  enabled: boolean
  /** While a roll's overlap runs, when the secret before it stops signing; else null. */
  previousSecretExpiresAt: string | null
  /** Why the service disabled the endpoint (every delivery failing for 5 days), and when; null unless it did, cleared when an operator sets `enabled`. */
  disabledReason: string | null
  disabledAt: string | null
  createdAt: string
  updatedAt: string
}

/** An endpoint with its signing secret, shown once, in the answer that made it. */
export type WebhookWithSecret = WebhookView & { secret: string }

/** Random bytes of a signing secret: the Standard Webhooks specification asks for 24 to 64. */
const SECRET_BYTES = 32
const SECRET_PREFIX = 'whsec_'

/** A request that breaks a rule of endpoints; `field` names the body's field. */
export class WebhookRuleError extends Error {
  override name = 'WebhookRuleError'
  constructor (readonly field: string, readonly reason: string) {
    super(`${field} ${reason}`)
  }
}

export class NoSuchWebhookError extends Error {
  override name = 'NoSuchWebhookError'
  constructor (readonly id: number) {
    super(`No webhook endpoint has the id ${id}.`)
  }
}

export class NoSuchDeliveryError extends Error {
  override name = 'NoSuchDeliveryError'
  constructor (readonly id: number, readonly webhookId: string) {
    super(`Webhook endpoint ${id} has no delivery of ${webhookId} (delivered and failed events are kept for 7 days).`)
  }
}

export class DeliveryPendingError extends Error {
  override name = 'DeliveryPendingError'
  constructor (readonly id: number, readonly webhookId: string) {
    super(`The delivery of ${webhookId} to webhook endpoint ${id} is still to be tried; only a succeeded or failed delivery can be sent again.`)
  }
}

/** Where the rules on URLs bend: WEBHOOK_ALLOW_PRIVATE, for development and tests. */
export interface WebhookPolicy {
  allowPrivate: boolean
}

/**
 * Refuses a URL deliveries may not go to (WebhookRuleError): not a URL,
 * not https (http too where private addresses are allowed), credentials in
 * it, or a literal address that is not public. A name is checked again at
 * each delivery, after it is resolved.
 */
function checkUrl (text: string, { allowPrivate }: WebhookPolicy): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new WebhookRuleError('url', 'must be an absolute URL, such as https://example.com/webhooks')
  }
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:']
  if (!schemes.includes(url.protocol)) {
    throw new WebhookRuleError('url', allowPrivate ? 'must be an https:// or http:// URL' : 'must be an https:// URL')
  }
  if (url.username !== '' || url.password !== '') throw new WebhookRuleError('url', 'must not carry a user name or password')
  const address = literalAddress(url.hostname)
  if (!allowPrivate && address !== undefined && !isPublicAddress(address)) {
    throw new WebhookRuleError('url', 'must be of a public address, not a loopback, private, link-local or other reserved one')
  }
  return url
}

export interface NewWebhookInput {
  url: string
  events: EventType[] | undefined
  description: string | undefined
  now: number
}

export async function createWebhook (storage: WebhookStore, input: NewWebhookInput, policy: WebhookPolicy): Promise<WebhookWithSecret> {
  const url = checkUrl(input.url, policy)
  const secret = newSecret()
  const record: NewWebhookRecord = {
    url: url.href,
    events: input.events ?? null,
    description: input.description ?? '',
    enabled: true,
    secret,
    createdAt: input.now,
    updatedAt: input.now
  }
  return { ...view(await storage.createWebhook(record), input.now), secret: secretText(secret) }
}

function newSecret (): Buffer {
  return randomBytes(SECRET_BYTES)
}

function secretText (secret: Buffer): string {
  return SECRET_PREFIX + secret.toString('base64')
}

/**
 * Gives the endpoint a new secret, answered this once. Deliveries are
 * signed with the secret before it too, one signature each, until the
 * overlap ends (0: at once), so that receivers can move to the new one;
 * a secret older than that stops signing at once, as a key's token does.
 */
export async function rollWebhookSecret (storage: WebhookStore, id: number, expireCurrentInSeconds: number, now: number): Promise<WebhookWithSecret> {
  const secret = newSecret()
  const until = expireCurrentInSeconds === 0 ? null : now + expireCurrentInSeconds * 1000
  return { ...view(found(id, await storage.rollWebhookSecret(id, secret, until, now)), now), secret: secretText(secret) }
}

/** Endpoints by id, from the one after `afterId`. */
export async function listWebhooks (storage: WebhookStore, afterId: number, limit: number): Promise<WebhookView[]> {
  const now = Date.now()
  return (await storage.listWebhooks(afterId, limit)).map((webhook) => view(webhook, now))
}

export async function showWebhook (storage: WebhookStore, id: number): Promise<WebhookView> {
  return view(found(id, await storage.getWebhook(id)), Date.now())
}

export interface WebhookUpdate {
  url?: string
  /** Null: every type. */
  events?: EventType[] | null
  description?: string
  enabled?: boolean
}

export async function updateWebhook (storage: WebhookStore, id: number, update: WebhookUpdate, now: number, policy: WebhookPolicy): Promise<WebhookView> {
  const changes: WebhookChanges = { updatedAt: now }
  if (update.url !== undefined) changes.url = checkUrl(update.url, policy).href
  if (update.events !== undefined) changes.events = update.events
  if (update.description !== undefined) changes.description = update.description
  if (update.enabled !== undefined) changes.enabled = update.enabled
  return view(found(id, await storage.changeWebhook(id, changes)), now)
}

/** Removes the endpoint and its deliveries, pending ones too. */
export async function deleteWebhook (storage: WebhookStore, id: number): Promise<WebhookView> {
  return view(found(id, await storage.deleteWebhook(id)), Date.now())
}

/** A delivery as operators see it. */
export interface DeliveryView {
  webhookId: string
  type: string
  eventCreatedAt: string
  state: DeliveryRecord['state']
  attempts: number
  lastStatus: number | null
  /** The start of the last failed attempt's answer, or what went wrong; null after a success. */
  lastError: string | null
  /** When it is tried next; null once it succeeded or failed. */
  nextAttemptAt: string | null
}

/** An endpoint's deliveries, newest event first, from the one before `beforeEventId`. */
export async function listDeliveries (storage: WebhookStore, id: number, beforeEventId: bigint | null, limit: number): Promise<DeliveryView[]> {
  found(id, await storage.getWebhook(id))
  return (await storage.listDeliveries(id, beforeEventId, limit)).map(deliveryView)
}

async function oneDelivery (storage: WebhookStore, id: number, eventId: bigint): Promise<DeliveryView | undefined> {
  const [delivery] = await storage.listDeliveries(id, eventId + 1n, 1)
  return delivery?.eventId === eventId ? deliveryView(delivery) : undefined
}

/**
 * Sends a succeeded or failed delivery again, as a new attempt of the same
 * webhook-id, due now. A failure is retried as any is, within the three
 * days after the event; past them, this one attempt is all.
 */
export async function resendDelivery (storage: WebhookStore, id: number, eventWebhookId: string, now: number): Promise<DeliveryView> {
  found(id, await storage.getWebhook(id))
  const eventId = BigInt(eventWebhookId.slice('evt_'.length))
  if (!await storage.resendDelivery(id, eventId, now)) {
    const delivery = await oneDelivery(storage, id, eventId)
    if (delivery === undefined) throw new NoSuchDeliveryError(id, eventWebhookId)
    throw new DeliveryPendingError(id, eventWebhookId)
  }
  const delivery = await oneDelivery(storage, id, eventId)
  // Removed with its endpoint in between.
  if (delivery === undefined) throw new NoSuchDeliveryError(id, eventWebhookId)
  return delivery
}

/** Writes a `webhook.test` event for this endpoint alone, delivered as any event is, and answers its delivery. */
export async function sendTestEvent (storage: WebhookStore, id: number, now: number): Promise<DeliveryView> {
  const data = JSON.stringify({ endpointId: id, message: 'A test event, sent by an operator; it announces no change.' })
  const eventId = await storage.addEndpointEvent(id, { type: TEST_EVENT_TYPE, createdAt: now, data })
  if (eventId === undefined) throw new NoSuchWebhookError(id)
  const delivery = await oneDelivery(storage, id, eventId)
  if (delivery === undefined) throw new NoSuchWebhookError(id)
  return delivery
}

function deliveryView (delivery: DeliveryRecord): DeliveryView {
  return {
    webhookId: webhookId(delivery.eventId),
    type: delivery.type,
    eventCreatedAt: new Date(delivery.createdAt).toISOString(),
    state: delivery.state,
    attempts: delivery.attempts,
    lastStatus: delivery.lastStatus,
    lastError: delivery.lastError,
    nextAttemptAt: delivery.state === 'pending' ? new Date(delivery.nextAttemptAt).toISOString() : null
  }
}

function found (id: number, webhook: WebhookRecord | undefined): WebhookRecord {
  if (webhook === undefined) throw new NoSuchWebhookError(id)
  return webhook
}

function view (webhook: WebhookRecord, now: number): WebhookView {
  const { previousSecret, previousSecretExpiresAt: until } = webhook
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    enabled: webhook.enabled,
    previousSecretExpiresAt: previousSecret !== null && until !== null && until > now ? new Date(until).toISOString() : null,
    disabledReason: webhook.disabledReason,
    disabledAt: webhook.disabledAt === null ? null : new Date(webhook.disabledAt).toISOString(),
    createdAt: new Date(webhook.createdAt).toISOString(),
    updatedAt: new Date(webhook.updatedAt).toISOString()
  }
}
