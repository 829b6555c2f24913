// Webhook deliveries, as a receiver checks them: the signature is verified
// by the `standardwebhooks` library (docs/WEBHOOKS.md in the service's
// repository), and the body is then parsed by this client's own JSON, since
// the library's parse is `JSON.parse`, which rounds ids past 2^53.
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { webhookTypes, type webhooks } from './generated/openapi.js'
import { parseJson } from './json.js'

export { WebhookVerificationError }

/** An event the OpenAPI document describes: a union on `type`, its `data` typed, int64 values `bigint`. */
export type WebhookEvent = {
  [T in keyof webhooks]: webhooks[T] extends { post: { requestBody: { content: { 'application/json': infer E } } } } ? E : never
}[keyof webhooks]

/**
 * A delivery's headers: a `Headers` (fetch, browsers), or an object such as
 * Node.js's `request.headers`, names in any case.
 */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>

const KNOWN = new Set<string>(webhookTypes)

/**
 * A delivery whose signature verified, of a type this client does not
 * describe: an endpoint given every type receives the operators' key and
 * quota events, and types may be added. It is authentic: answer it 2xx,
 * and ignore it unless you know the type.
 */
export class UnknownWebhookEventError extends Error {
  override readonly name = 'UnknownWebhookEventError'
  /** The event's `webhook-id`. */
  readonly webhookId: string
  readonly type: string
  /** The event as parsed (int64 properties the client knows as `bigint`). */
  readonly event: unknown

  constructor (webhookId: string, type: string, event: unknown) {
    super(`a verified event of a type this client does not describe: ${type}`)
    this.webhookId = webhookId
    this.type = type
    this.event = event
  }
}

function header (headers: WebhookHeaders, name: string): string {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? ''
  const record = headers as Record<string, string | string[] | undefined>
  const found = Object.keys(record).find((key) => key.toLowerCase() === name)
  const value = found === undefined ? undefined : record[found]
  // A header sent twice arrives as a list: joined as HTTP joins it, which no valid signature matches.
  return Array.isArray(value) ? value.join(', ') : value ?? ''
}

/**
 * Verifies a delivery and returns its event. `secret` is the endpoint's
 * `whsec_…`; `body` is the raw body as it came (not parsed and written again).
 * Throws the library's `WebhookVerificationError` when a header is missing,
 * no signature matches (a changed body, another secret), or
 * `webhook-timestamp` is more than 5 minutes from this machine's clock;
 * `UnknownWebhookEventError` for an authentic event of a type not described.
 */
export function verifyWebhook (secret: string, body: string | Uint8Array, headers: WebhookHeaders): WebhookEvent {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body)
  const webhookId = header(headers, 'webhook-id')
  new Webhook(secret).verify(text, {
    'webhook-id': webhookId,
    'webhook-timestamp': header(headers, 'webhook-timestamp'),
    'webhook-signature': header(headers, 'webhook-signature')
  }, { jsonParse: false })
  const event = parseJson(text)
  const type = typeof event === 'object' && event !== null ? (event as { type?: unknown }).type : undefined
  if (typeof type !== 'string' || !KNOWN.has(type)) throw new UnknownWebhookEventError(webhookId, String(type), event)
  return event as WebhookEvent
}
