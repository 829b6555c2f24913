// One log line per request (docs/OPERATING.md: Logs), written when its
// response has gone: who called (the key's id, never its token), what
// (method, route template, URL), the answer (status, error code) and how
// long it took. The request id is the logger's own binding (`requestId`),
// on every line a request writes. A 5xx is logged at `error` with the cause
// that made it, which the client's body never carries.
//
// Fastify's LogController is the place for this: its two lines per request
// (incoming, completed) become this one, and the first is kept at `debug`.
// https://fastify.dev/docs/latest/Reference/Server/#logcontroller
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { findTokens } from './keys/tokens.js'
import { traceIdOf } from './tracing/hooks.js'

/**
 * A token sent where none belongs, in the URL (`?access_token=`, as RFC 6750
 * §2.3 has it, or a path) or in `X-Request-Id`, is kept out of the log like
 * any other token (docs/KEYS.md), percent-encoded or not, with or
 * without its prefix: src/keys/tokens.ts knows what one looks like. So is
 * any of `secrets` (ADMIN_TOKEN), and either kind sent base64- or
 * hex-encoded: each part of a URL between its separators is read as
 * written, then decoded both ways.
 */
function holdsSecret (text: string, secrets: readonly string[]): boolean {
  return findTokens(text).length > 0 || partHoldsSecret(percentDecoded(text), secrets)
}

/**
 * Base64 of a 32-character secret is 43 characters at least, hex 64 (a
 * token's, 60 and 90): shorter runs are no such thing, and are not decoded,
 * which keeps a request's log line cheap.
 */
const BASE64 = /^[A-Za-z0-9+/_-]{43,}={0,2}$/
const HEX = /^(?:[0-9A-Fa-f]{2}){32,}$/

/** Whether a part of a URL, percent-decoded, holds one of `secrets` (ADMIN_TOKEN has 32 characters at least), or either kind base64- or hex-encoded. */
function partHoldsSecret (plain: string, secrets: readonly string[]): boolean {
  return secrets.some((secret) => plain.includes(secret)) || encodedSecret(plain, secrets)
}

/** Whether `plain` (percent-decoded already) is a token or one of `secrets`, as base64 or hex. */
function encodedSecret (plain: string, secrets: readonly string[]): boolean {
  if (plain.length < 43) return false
  const decoded = [
    ...(HEX.test(plain) ? [Buffer.from(plain, 'hex').toString('latin1')] : []),
    ...(BASE64.test(plain) ? [Buffer.from(plain, 'base64').toString('latin1')] : [])
  ]
  return decoded.some((text) => findTokens(text).length > 0 || secrets.some((secret) => text.includes(secret)))
}

/** Up to three rounds of percent-decoding, as keys/tokens.ts does; a malformed sequence stops it. */
function percentDecoded (text: string): string {
  let decoded = text
  for (let round = 0; round < 3 && decoded.includes('%'); round++) {
    try {
      decoded = decodeURIComponent(decoded)
    } catch {
      break
    }
  }
  return decoded
}

/** A client's request id: 1 to 128 visible ASCII characters, so that it is safe in a header and a log line. */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/** Makes a request's id: the client's when usable; one that may hold a token or one of `secrets` is not, since ids are logged. */
export function requestIdMaker (secrets: readonly string[] = []): (request: IncomingMessage) => string {
  return (request) => {
    const theirs = request.headers['x-request-id']
    return typeof theirs === 'string' && CLIENT_REQUEST_ID.test(theirs) && !holdsSecret(theirs, secrets) ? theirs : randomUUID()
  }
}

/** `url` with every token in it replaced by `[redacted]`, and every part that holds one of `secrets` or an encoded token. */
export function loggableUrl (url: string, secrets: readonly string[] = []): string {
  const found = findTokens(url)
  let out = ''
  let written = 0
  // Sorted by start; overlapping finds (a token and its own secret) become one.
  for (const { start, end } of found) {
    if (end <= written) continue
    out += url.slice(written, Math.max(start, written)) + (start >= written ? '[redacted]' : '')
    written = end
  }
  out += url.slice(written)
  for (const secret of secrets) out = out.replaceAll(secret, '[redacted]')
  // An encoded token or secret, in one part of the URL; a secret written across separators (base64 has `/`), in the whole.
  out = redactEncodedParts(out, secrets)
  return secrets.some((secret) => percentDecoded(out).includes(secret)) ? '[redacted]' : out
}

/** Whether a character ends a part of a URL (`/ ? & = ; #`): its path segments, query pairs and fragment. */
const isSeparator = (code: number): boolean => code === 0x2f || code === 0x3f || code === 0x26 || code === 0x3d || code === 0x3b || code === 0x23

/** `url` with each part that is a token or a secret, base64- or hex-encoded, as `[redacted]`. A loop, since a regular expression for long runs backtracks on every short one. */
function redactEncodedParts (url: string, secrets: readonly string[]): string {
  let out = ''
  let written = 0
  let start = 0
  for (let i = 0; i <= url.length; i++) {
    if (i < url.length && !isSeparator(url.charCodeAt(i))) continue
    if (i - start >= 32 && partHoldsSecret(percentDecoded(url.slice(start, i)), secrets)) {
      out += url.slice(written, start) + '[redacted]'
      written = i
    }
    start = i + 1
  }
  return written === 0 ? url : out + url.slice(written)
}

/** The levels at which a `debug` line is written. */
const WRITES_DEBUG = new Set(['debug', 'trace'])

export class RequestLog extends LogController {
  /** `secrets`: values besides API tokens that no log line may hold (ADMIN_TOKEN). */
  constructor (private readonly secrets: readonly string[] = []) {
    super({ requestIdLogLabel: 'requestId' })
  }

  /** At `debug` only: a line when a request arrives, to find the ones that never finish. */
  override incomingRequest (request: FastifyRequest): void {
    // Fastify calls this for every request: at `info` the line is dropped, and so should be the token scan of its URL.
    if (!WRITES_DEBUG.has(request.log.level)) return
    request.log.debug({ method: request.method, url: loggableUrl(request.url, this.secrets) }, 'request received')
  }

  /** The not-found handler answers, and the line is written like any other. */
  override routeNotFound (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const status = reply.statusCode
    const line = {
      keyId: request.access?.key.id,
      method: request.method,
      route: request.routeOptions.url,
      url: loggableUrl(request.url, this.secrets),
      status,
      code: reply.errorCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      // Only when tracing is on: the trace this request's span belongs to.
      traceId: traceIdOf(request)
    }
    if (status >= 500) request.log.error({ ...line, err: reply.failure ?? error }, 'request failed')
    // The response itself failed: most often, the client went away mid-answer.
    else if (error !== null && error !== undefined) request.log.warn({ ...line, err: error }, 'response not delivered')
    else request.log.info(line, 'request completed')
  }
}
