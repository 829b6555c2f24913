// Delivers the events written with changes (docs/WEBHOOKS.md): one dispatcher
// per process (the main thread with WORKERS), every instance's sharing the
// work through the database. Each turn fans new events out to the endpoints
// that want them, writes how the last attempts went, and takes as many due
// deliveries as it may send at once; a taken delivery is due again after a
// lease, so that one taken by a process that died is sent by another.
import http from 'node:http'
import https from 'node:https'
import type { Logger } from 'pino'
import type { DeliveryOutcome, DueDelivery, WebhookStore } from '../db/storage.js'
import { ATTEMPT_TIMEOUT_MS, send, webhookId, type Attempt } from './deliver.js'

/** How often due deliveries are looked for: the lag from a commit to its delivery, while receivers are healthy. */
const POLL_MS = 200
/** Deliveries in flight at once, in all, and to one endpoint: a slow receiver holds its own share only. */
const MOST_IN_FLIGHT = 64
const MOST_PER_ENDPOINT = 16
/**
 * How long a taken delivery is this dispatcher's. One taken beyond its
 * endpoint's share waits for at most MOST_IN_FLIGHT / MOST_PER_ENDPOINT
 * attempts to that endpoint (each at most ATTEMPT_TIMEOUT_MS) before its own.
 */
const LEASE_MS = (MOST_IN_FLIGHT / MOST_PER_ENDPOINT + 2) * ATTEMPT_TIMEOUT_MS
/** Turns woken by attempts that ended come at most this often, so that each writes and takes many at once. */
const TURN_SPACING_MS = 20
/** Events fanned out per statement. */
const FAN_OUT_BATCH = 500
/** Retries back off from this, doubling, up to the longest wait; a delivery still failing this long after its event is given up. */
const FIRST_RETRY_MS = 30_000
const LONGEST_RETRY_MS = 12 * 3_600_000
export const GIVE_UP_AFTER_MS = 3 * 24 * 3_600_000
/** Delivered or given-up events are kept this long. */
const KEEP_EVENTS_MS = 7 * 24 * 3_600_000
const PURGE_EVERY_MS = 3_600_000
/** An endpoint whose every attempt has failed for this long is disabled, as Svix and Stripe do; looked for at most this often, after failures. */
export const DISABLE_AFTER_MS = 5 * 24 * 3_600_000
const DISABLE_CHECK_EVERY_MS = 60_000

export interface DispatcherOptions {
  storage: WebhookStore
  logger: Logger
  allowPrivate: boolean
  /** Unix milliseconds; injected so that tests control backoff. */
  now?: () => number
  random?: () => number
  /** Told how each attempt ended (telemetry/metrics.ts); `retry` when it was not the delivery's first. */
  observe?: (outcome: 'succeeded' | 'failed' | 'retried', retry: boolean) => void
  /** Periodic work whose events this dispatcher delivers (the look for expiries), run in its turns, each at most every `everyMs`. */
  chores?: readonly Chore[]
}

export interface Chore {
  /** For the log, when a run fails. */
  name: string
  everyMs: number
  run: (now: number) => Promise<unknown>
}

/** When a failed attempt goes again, or undefined: never (final, or past the time retries are given). */
export function nextAttempt (attempt: Extract<Attempt, { ok: false }>, attempts: number, createdAt: number, now: number, random: () => number): number | undefined {
  if (attempt.final) return undefined
  const backoff = Math.min(FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 30), LONGEST_RETRY_MS)
  // Equal jitter: half the wait fixed, half random, so that receivers back up are not sent everything at once.
  const wait = Math.max(attempt.retryAfterMs ?? 0, backoff / 2 + random() * backoff / 2)
  const at = now + Math.round(Math.min(wait, LONGEST_RETRY_MS))
  return at > createdAt + GIVE_UP_AFTER_MS ? undefined : at
}

export class Dispatcher {
  readonly #storage: WebhookStore
  readonly #logger: Logger
  readonly #allowPrivate: boolean
  readonly #now: () => number
  readonly #random: () => number
  readonly #observe: DispatcherOptions['observe']
  readonly #agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
  readonly #stopping = new AbortController()
  /** Deliveries in flight, per endpoint. */
  readonly #inFlight = new Map<number, number>()
  #sending = 0
  /** Per endpoint, deliveries taken beyond its share, sent as its attempts end. */
  readonly #waiting = new Map<number, DueDelivery[]>()
  #outcomes: DeliveryOutcome[] = []
  readonly #attempts = new Set<Promise<void>>()
  #timer: NodeJS.Timeout | undefined
  #turn: Promise<void> | undefined
  #again = false
  #purgedAt = 0
  readonly #chores: ReadonlyArray<Chore & { lastRunAt: number }>
  #disableCheckedAt = 0
  #soon: NodeJS.Timeout | undefined

  constructor ({ storage, logger, allowPrivate, now = Date.now, random = Math.random, chores = [], observe }: DispatcherOptions) {
    this.#chores = chores.map((chore) => ({ ...chore, lastRunAt: -Infinity }))
    this.#observe = observe
    this.#storage = storage
    this.#logger = logger
    this.#allowPrivate = allowPrivate
    this.#now = now
    this.#random = random
  }

  start (): void {
    this.#timer = setInterval(() => { this.#wake() }, POLL_MS)
    this.#timer.unref()
    this.#wake()
  }

  /** Stops taking deliveries and abandons those in flight: their leases end, and another turn sends them again. */
  async stop (): Promise<void> {
    clearInterval(this.#timer)
    clearTimeout(this.#soon)
    this.#stopping.abort()
    await Promise.allSettled([...this.#attempts])
    await this.#turn
    try {
      await this.#storage.recordDeliveries(this.#outcomes.splice(0))
    } catch (error) {
      this.#logger.warn({ err: error }, 'webhooks: the last outcomes were not written; those deliveries will be sent again')
    }
    this.#agents.http.destroy()
    this.#agents.https.destroy()
  }

  #wakeSoon (): void {
    if (this.#soon !== undefined) return
    this.#soon = setTimeout(() => {
      this.#soon = undefined
      this.#wake()
    }, TURN_SPACING_MS)
  }

  /** Runs a turn now, or right after the one running. */
  #wake (): void {
    if (this.#stopping.signal.aborted) return
    if (this.#turn !== undefined) {
      this.#again = true
      return
    }
    this.#turn = this.#runTurn().finally(() => {
      this.#turn = undefined
      if (this.#again) {
        this.#again = false
        this.#wake()
      }
    })
  }

  async #runTurn (): Promise<void> {
    try {
      const now = this.#now()
      const outcomes = this.#outcomes.splice(0)
      try {
        await this.#storage.recordDeliveries(outcomes)
      } catch (error) {
        // Written next turn; meanwhile their leases keep them from being sent again.
        this.#outcomes.unshift(...outcomes)
        throw error
      }
      if (outcomes.some((outcome) => outcome.state !== 'succeeded') && now - this.#disableCheckedAt >= DISABLE_CHECK_EVERY_MS) {
        this.#disableCheckedAt = now
        await this.#disableFailing(now)
      }
      while (await this.#storage.fanOutEvents(FAN_OUT_BATCH, now) === FAN_OUT_BATCH && !this.#stopping.signal.aborted);
      await this.#take(now)
      if (now - this.#purgedAt >= PURGE_EVERY_MS) {
        this.#purgedAt = now
        await this.#storage.purgeEvents(now - KEEP_EVENTS_MS)
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'webhooks: a delivery turn failed; the next one tries again')
    }
    await this.#runChores()
  }

  /** Each chore that is due, apart from the deliveries: one that fails is logged and runs again when next due. */
  async #runChores (): Promise<void> {
    for (const chore of this.#chores) {
      const now = this.#now()
      if (now - chore.lastRunAt < chore.everyMs || this.#stopping.signal.aborted) continue
      chore.lastRunAt = now
      try {
        await chore.run(now)
      } catch (error) {
        this.#logger.warn({ err: error, chore: chore.name }, 'webhooks: a periodic look failed; it runs again when next due')
      }
    }
  }

  async #disableFailing (now: number): Promise<void> {
    const days = DISABLE_AFTER_MS / 86_400_000
    const disabled = await this.#storage.disableFailingEndpoints(now - DISABLE_AFTER_MS,
      (endpoint) => `every delivery failed for ${days} days, since ${new Date(endpoint.failingSince ?? now).toISOString()}`, now)
    for (const endpoint of disabled) {
      this.#logger.warn({ endpointId: endpoint.id, failingSince: new Date(endpoint.failingSince ?? now).toISOString(), reason: endpoint.disabledReason },
        `webhooks: endpoint ${endpoint.id} disabled: ${endpoint.disabledReason ?? ''}; its pending deliveries wait until an operator enables it`)
    }
  }

  /** Takes as many due deliveries as there is room for; endpoints with their share in flight are left to the next turns. */
  async #take (now: number): Promise<void> {
    const room = MOST_IN_FLIGHT - this.#sending - [...this.#waiting.values()].reduce((sum, queue) => sum + queue.length, 0)
    if (room <= 0) return
    const full = [...this.#inFlight].filter(([, count]) => count >= MOST_PER_ENDPOINT).map(([id]) => id)
    const taken = await this.#storage.claimDeliveries({ now, leaseUntil: now + LEASE_MS, limit: room, skipEndpoints: full })
    for (const delivery of taken) this.#queue(delivery)
  }

  #queue (delivery: DueDelivery): void {
    if ((this.#inFlight.get(delivery.endpointId) ?? 0) < MOST_PER_ENDPOINT) {
      this.#start(delivery)
      return
    }
    const queue = this.#waiting.get(delivery.endpointId) ?? []
    queue.push(delivery)
    this.#waiting.set(delivery.endpointId, queue)
  }

  #start (delivery: DueDelivery): void {
    const { endpointId } = delivery
    this.#inFlight.set(endpointId, (this.#inFlight.get(endpointId) ?? 0) + 1)
    this.#sending++
    const attempt = this.#attempt(delivery).finally(() => {
      this.#attempts.delete(attempt)
      this.#sending--
      const left = (this.#inFlight.get(endpointId) ?? 1) - 1
      if (left === 0) this.#inFlight.delete(endpointId)
      else this.#inFlight.set(endpointId, left)
      const next = this.#waiting.get(endpointId)?.shift()
      if (this.#waiting.get(endpointId)?.length === 0) this.#waiting.delete(endpointId)
      if (next !== undefined && !this.#stopping.signal.aborted) this.#start(next)
      // Its outcome is written, and the room it leaves filled, soon, with others'.
      this.#wakeSoon()
    })
    this.#attempts.add(attempt)
  }

  async #attempt (delivery: DueDelivery): Promise<void> {
    const now = this.#now()
    const attempt = await send(delivery, { allowPrivate: this.#allowPrivate, now, agents: this.#agents, signal: this.#stopping.signal })
    // Abandoned at a stop: the lease sends it again.
    if (this.#stopping.signal.aborted && !attempt.ok) return
    const { eventId, endpointId } = delivery
    // Claiming counted this attempt already.
    const retry = delivery.attempts > 1
    if (attempt.ok) {
      this.#outcomes.push({ eventId, endpointId, state: 'succeeded', nextAttemptAt: now, lastStatus: attempt.status, lastError: null, attemptedAt: now })
      this.#observe?.('succeeded', retry)
      return
    }
    const at = nextAttempt(attempt, delivery.attempts, delivery.createdAt, now, this.#random)
    this.#observe?.(at === undefined ? 'failed' : 'retried', retry)
    this.#outcomes.push({
      eventId,
      endpointId,
      state: at === undefined ? 'failed' : 'pending',
      nextAttemptAt: at ?? now,
      lastStatus: attempt.status,
      lastError: attempt.error,
      attemptedAt: now
    })
    this.#logger.info({ webhookId: webhookId(eventId), endpointId, attempts: delivery.attempts, status: attempt.status, error: attempt.error, retry: at !== undefined },
      'webhooks: a delivery failed')
  }
}
