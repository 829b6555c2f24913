// One attempt at one delivery, as the Standard Webhooks specification says
// (https://www.standardwebhooks.com, docs/WEBHOOKS.md): a signed POST, read
// back within bounds, and what it means for the next attempt.
import { createHmac } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import type { DueDelivery } from '../db/storage.js'
import { isPublicAddress, literalAddress, publicLookup } from './addresses.js'

/** The whole attempt, from the lookup to the last byte read. */
export const ATTEMPT_TIMEOUT_MS = 10_000
/** Of a response's body, at most this much is read, and only its start is kept for operators. */
const MAX_RESPONSE_BYTES = 64 * 1024
const KEPT_ERROR_CHARS = 200

/** How an attempt went. */
export type Attempt =
  | { ok: true, status: number }
  /** `final`: no later attempt can succeed (a 4xx other than 408 and 429). `retryAfterMs`: the receiver's Retry-After. */
  | { ok: false, final: boolean, status: number | null, error: string, retryAfterMs?: number }

export interface SendOptions {
  allowPrivate: boolean
  /** Unix milliseconds. */
  now: number
  agents: { http: http.Agent, https: https.Agent }
  signal?: AbortSignal
}

/** The webhook-id of an event: the same on every attempt, for receivers to de-duplicate by. */
export function webhookId (eventId: bigint): string {
  return `evt_${eventId}`
}

/** The body every endpoint is sent: `data` is the JSON written with the event, as it was. */
function deliveryBody (delivery: Pick<DueDelivery, 'type' | 'createdAt' | 'data'>): string {
  return `{"type":${JSON.stringify(delivery.type)},"timestamp":"${new Date(delivery.createdAt).toISOString()}","data":${delivery.data}}`
}

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with each live secret, space-separated. */
function signatures (secrets: readonly Buffer[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64')}`).join(' ')
}

/** The current secret, and the one before a roll while its overlap runs: a receiver holding either verifies. */
function liveSecrets ({ secret, previousSecret, previousSecretExpiresAt }: DueDelivery, now: number): Buffer[] {
  return previousSecret !== null && previousSecretExpiresAt !== null && previousSecretExpiresAt > now ? [secret, previousSecret] : [secret]
}

export async function send (delivery: DueDelivery, { allowPrivate, now, agents, signal }: SendOptions): Promise<Attempt> {
  const url = new URL(delivery.url)
  // A literal address is never looked up, so the lookup's check cannot see it.
  const address = literalAddress(url.hostname)
  if (!allowPrivate && (url.protocol !== 'https:' || (address !== undefined && !isPublicAddress(address)))) {
    return { ok: false, final: false, status: null, error: 'the URL is not an https:// URL of a public address' }
  }
  const id = webhookId(delivery.eventId)
  const timestamp = Math.floor(now / 1000)
  const body = deliveryBody(delivery)
  const request = url.protocol === 'https:' ? https.request : http.request
  let timedOut = false
  let timer: NodeJS.Timeout | undefined
  const answer = await new Promise<Attempt>((resolve) => {
    const failed = (error: unknown): void => {
      const reason = error instanceof Error ? error.message : String(error)
      resolve({ ok: false, final: false, status: null, error: timedOut ? `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` : reason })
    }
    const outgoing = request(url, {
      method: 'POST',
      agent: url.protocol === 'https:' ? agents.https : agents.http,
      ...(allowPrivate ? {} : { lookup: publicLookup }),
      // A timer rather than AbortSignal.timeout() joined to the stop's signal by AbortSignal.any(): making those signals and their listeners was about 5 % of the samples of a create-and-deliver load (docs/PERFORMANCE.md).
      ...(signal === undefined ? {} : { signal }),
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'user-agent': 'petstore-webhooks',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatures(liveSecrets(delivery, now), id, timestamp, body)
      }
    }, (response) => {
      let read = 0
      const kept: Buffer[] = []
      const done = (): void => {
        const status = response.statusCode ?? 0
        if (status >= 200 && status < 300) {
          resolve({ ok: true, status })
          return
        }
        const text = Buffer.concat(kept).toString('utf8').slice(0, KEPT_ERROR_CHARS)
        const retryAfterMs = status === 429 ? retryAfter(response.headers['retry-after'], now) : undefined
        resolve({
          ok: false,
          final: status >= 400 && status < 500 && status !== 408 && status !== 429,
          status,
          error: `HTTP ${status}${text === '' ? '' : `: ${text}`}`,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs })
        })
      }
      response.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (kept.length === 0 || Buffer.concat(kept).length < KEPT_ERROR_CHARS) kept.push(chunk)
        // Enough is read to answer: the rest is not waited for.
        if (read >= MAX_RESPONSE_BYTES) {
          response.destroy()
          done()
        }
      })
      response.on('end', done)
      response.on('error', failed)
    })
    outgoing.on('error', failed)
    outgoing.end(body)
    timer = setTimeout(() => {
      timedOut = true
      outgoing.destroy(new Error(`no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`))
    }, ATTEMPT_TIMEOUT_MS)
    // As AbortSignal.timeout's: a pending attempt keeps no process alive.
    timer.unref()
  })
  clearTimeout(timer)
  return answer
}

/** Retry-After in seconds or as an HTTP date (RFC 9110 §10.2.3), as milliseconds from `now`; undefined when it is neither. */
function retryAfter (value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}
