// Sends each request of the client and does what the service asks of every
// client (docs/API.md, what a client must know), in one place, as
// stripe-node's RequestSender and undici's RetryHandler do for theirs:
//
// - retries only what is safe to send again (an idempotent method, or a
//   request with an Idempotency-Key), only after a 429, a 503, a 409
//   `idempotency_key_in_use` or a network error, at most `maxRetries` times
//   and within the call's time budget (`timeoutMs`);
// - waits between tries with capped exponential backoff and full jitter
//   (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/),
//   and never less than the response's Retry-After;
// - never retries a banned key, and sends nothing with it until the ban ends;
// - keeps the rate-limit state of the last response, and paces requests
//   with it when asked to;
// - tells once when a response says its operation is deprecated.
//
// It works on standard Request and Response objects, with the `fetch` it is
// given, so that it runs in browsers and Node.js alike.
//
// Written here rather than taken from a fetch wrapper's retry option (ky's
// is the closest): those decide by method and status alone, while here the
// decision needs the error's code (a 429 `api_key_banned` must stop, a 409
// `idempotency_key_in_use` must wait), a POST may be retried only with an
// Idempotency-Key, and the waits share one time budget with the ban and the
// pacing. undici's RetryHandler is a Node.js dispatcher, not a fetch.
import LinkHeader from 'http-link-header'
import { ApiKeyBannedError, InsufficientScopeError, PetstoreError, RateLimitedError, type ErrorDetail } from './errors.js'
import { parseJson } from './json.js'
import { Pacer, type RateLimit } from './pacer.js'
import { sleep, timeoutError } from './timers.js'

/** What a response that carries `Deprecation` says about its operation. */
export interface DeprecationNotice {
  /** The request whose response said so. */
  method: string
  url: string
  /** When the operation was deprecated (`Deprecation`, RFC 9745). */
  deprecatedAt: Date | undefined
  /** When it stops working (`Sunset`, RFC 8594). */
  sunset: Date | undefined
  /** What to use instead (`Link: <…>; rel="successor-version"`). */
  successor: string | undefined
}

type Fetch = (request: Request) => Promise<Response>

interface TransportOptions {
  fetch: Fetch
  maxRetries: number
  timeoutMs: number
  pace: boolean
  onDeprecation: (notice: DeprecationNotice) => void
}

/** The first retry waits up to this long; each next one up to twice as long as the one before… */
const BACKOFF_BASE_MS = 500
/** …and never more than this, unless Retry-After asks for more. */
const BACKOFF_CAP_MS = 20_000

/** Methods that have the same effect however often they are sent (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/** A try's outcome: a 2xx response, or an error response or network error. */
type Outcome = { ok: true, response: Response } | { ok: false, response?: Response, error: unknown }

export class Transport {
  readonly #options: TransportOptions
  readonly #pacer: Pacer | undefined
  #rateLimit: RateLimit | undefined
  #bannedUntil: Date | undefined
  #deprecationNoticed = false

  constructor (options: TransportOptions) {
    this.#options = options
    this.#pacer = options.pace ? new Pacer(options.timeoutMs) : undefined
  }

  /** The rate-limit state the last response described. */
  get rateLimit (): RateLimit | undefined {
    return this.#rateLimit
  }

  /**
   * Sends `request` (again, when that is safe and worth it) and resolves
   * with the first 2xx response, its body read. Rejects with a
   * PetstoreError (or subclass) for an error response, with the network
   * error when no response came, or with a `TimeoutError` DOMException
   * when the time budget ran out.
   */
  async send (request: Request): Promise<Response> {
    const deadline = Date.now() + this.#options.timeoutMs
    const retryable = IDEMPOTENT_METHODS.has(request.method) || request.headers.has('idempotency-key')
    for (let attempt = 0; ; attempt++) {
      this.#refuseWhileBanned()
      const outcome = await this.#attempt(request, deadline)
      if (outcome.ok) return outcome.response
      if (outcome.error instanceof ApiKeyBannedError) {
        this.#bannedUntil = outcome.error.until
        throw outcome.error
      }
      const wait = retryable && attempt < this.#options.maxRetries ? retryDelay(outcome, attempt) : undefined
      if (wait === undefined || Date.now() + wait > deadline) throw outcome.error
      await sleep(wait)
    }
  }

  async #attempt (request: Request, deadline: number): Promise<Outcome> {
    const release = await this.#pacer?.acquire(deadline)
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(timeoutError(this.#options.timeoutMs)), deadline - Date.now())
    try {
      const response = await this.#options.fetch(new Request(request.clone(), { signal: controller.signal }))
      this.#observe(request, response)
      // Read here, within the time budget, so that no body is left to wait on after it.
      const body = await response.arrayBuffer()
      const read = new Response(body.byteLength === 0 ? null : body, response)
      return read.ok ? { ok: true, response: read } : { ok: false, response: read, error: toError(read, new TextDecoder().decode(body)) }
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason
      return { ok: false, error }
    } finally {
      clearTimeout(timer)
      release?.()
    }
  }

  #refuseWhileBanned (): void {
    const until = this.#bannedUntil
    if (until === undefined) return
    if (Date.now() >= until.getTime()) {
      this.#bannedUntil = undefined
      return
    }
    throw new ApiKeyBannedError({
      code: 'api_key_banned',
      status: 429,
      message: `Not sent: this API key is banned until ${until.toISOString()}.`,
      until
    })
  }

  /** What every response says, whatever its status. */
  #observe (request: Request, response: Response): void {
    const rateLimit = readRateLimit(response.headers)
    if (rateLimit !== undefined) {
      this.#rateLimit = rateLimit
      this.#pacer?.update(rateLimit)
    }
    const deprecation = response.headers.get('deprecation')
    if (deprecation !== null && !this.#deprecationNoticed) {
      this.#deprecationNoticed = true
      this.#options.onDeprecation({
        method: request.method,
        url: request.url,
        deprecatedAt: structuredDate(deprecation),
        sunset: httpDate(response.headers.get('sunset')),
        successor: linkTarget(response.headers.get('link'), 'successor-version')
      })
    }
  }
}

/** How long to wait before the next try, or undefined when this outcome is not worth another. */
function retryDelay ({ response, error }: Outcome & { ok: false }, attempt: number): number | undefined {
  const backoff = Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt)
  if (response === undefined) return error instanceof TypeError ? backoff : undefined
  const code = error instanceof PetstoreError ? error.code : undefined
  const worth = response.status === 429 || response.status === 503 || (response.status === 409 && code === 'idempotency_key_in_use')
  return worth ? Math.max(backoff, retryAfterMs(response.headers) ?? 0) : undefined
}

function toError (response: Response, text: string): PetstoreError {
  const body = errorBody(text)
  const init = {
    code: body?.code ?? 'unexpected_response',
    message: body?.message ?? `HTTP ${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`}`,
    status: response.status,
    details: body?.details,
    response
  }
  if (response.status === 403 && init.code === 'insufficient_scope') {
    return new InsufficientScopeError({ ...init, scope: challengeScope(response.headers.get('www-authenticate')) })
  }
  if (response.status !== 429) return new PetstoreError(init)
  const retryAfter = retryAfterMs(response.headers)
  const retryAt = new Date(Date.now() + (retryAfter ?? 0))
  if (init.code === 'api_key_banned') {
    // Retry-After counts from now, whatever this machine's clock says; X-RateLimit-Reset is the ban's end by the service's clock.
    const reset = readRateLimit(response.headers)?.resetAt
    return new ApiKeyBannedError({ ...init, until: retryAfter === undefined && reset !== undefined ? reset : retryAt })
  }
  return new RateLimitedError({ ...init, retryAt })
}

/** The `scope` of a Bearer challenge (RFC 6750 §3), as the service writes it: `scope="pets:write"`. */
function challengeScope (challenge: string | null): string | undefined {
  return challenge === null ? undefined : /(?:^|[ ,])scope="([^"]*)"/.exec(challenge)?.[1]
}

function errorBody (text: string): { code: string, message: string, details?: ErrorDetail[] } | undefined {
  try {
    const body = parseJson(text) as { code?: unknown, message?: unknown, details?: unknown }
    if (typeof body.code !== 'string' || typeof body.message !== 'string') return undefined
    return { code: body.code, message: body.message, ...(Array.isArray(body.details) ? { details: body.details as ErrorDetail[] } : {}) }
  } catch {
    return undefined
  }
}

/** Retry-After (RFC 9110 §10.2.3): seconds, or an HTTP date. */
function retryAfterMs (headers: Headers): number | undefined {
  const value = headers.get('retry-after')?.trim()
  if (value === undefined || value === '') return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = httpDate(value)
  return date === undefined ? undefined : Math.max(0, date.getTime() - Date.now())
}

function readRateLimit (headers: Headers): RateLimit | undefined {
  const [limit, remaining, reset] = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']
    .map((name) => headers.get(name)?.trim())
    .map((value) => value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined)
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined
  return { limit, remaining, resetAt: new Date(reset * 1000) }
}

/** A structured-field date (RFC 9651 §3.3.7), as `Deprecation` carries it: `@1795132800`. */
function structuredDate (value: string): Date | undefined {
  const match = /^@(-?\d+)$/.exec(value.trim())
  return match?.[1] === undefined ? undefined : new Date(Number(match[1]) * 1000)
}

function httpDate (value: string | null): Date | undefined {
  const time = value === null ? Number.NaN : Date.parse(value)
  return Number.isNaN(time) ? undefined : new Date(time)
}

/** The target of a `Link` entry with relation `rel`. */
export function linkTarget (value: string | null, rel: string): string | undefined {
  if (value === null) return undefined
  try {
    return LinkHeader.parse(value).rel(rel)[0]?.uri
  } catch {
    return undefined
  }
}
