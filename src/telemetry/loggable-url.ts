// What of a URL or header may be logged (docs/SECURITY.md): a token sent where
// none belongs (`?access_token=`, RFC 6750 §2.3, a path, `X-Request-Id`) or one
// of `secrets` (ADMIN_TOKEN), plain, percent-, base64- or hex-encoded, is
// redacted; so is any text that may echo a request (an error's message, a
// span's attribute). Apart from request-log.ts so that tracing can use it
// without importing Fastify before its instrumentation is registered.
import { HAS_PREFIX, findTokens } from '../keys/tokens.js'

/** Whether `text` holds a token, with or without its prefix, or a secret; each part of a URL between its separators is read as written, then decoded both ways. */
export function holdsSecret (text: string, secrets: readonly string[]): boolean {
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

/**
 * The runs of a text read as URLs by loggableText: apart at spaces, quotes,
 * brackets and punctuation, which no token, secret, or base64, hex or
 * percent-encoding of one holds (`Nothing is at GET /v1/…/TOKEN.` ends its path at the dot).
 */
const TEXT_RUNS = /[^\s"'`()<>[\]{},.:]+/g

/**
 * `text` (an error's message or stack, a span's attribute) with every token
 * and secret redacted as loggableUrl redacts them in a URL, run by run; one
 * still found in the whole redacts all of it.
 */
export function loggableText (text: string, secrets: readonly string[] = []): string {
  // Most of what a span holds (a route, SQL, a status) cannot hold one, and is passed at a tenth of the cost.
  if (!mayHoldSecret(text) && !secrets.some((secret) => text.includes(secret))) return text
  let out = text
  for (const secret of secrets) out = out.replaceAll(secret, '[redacted]')
  out = out.replace(TEXT_RUNS, (run) => loggableUrl(run, secrets))
  return holdsSecret(out, secrets) ? '[redacted]' : out
}

/**
 * The shortest run of their alphabets that a token's secret (36), ADMIN_TOKEN
 * (32, hex or base64) or a base64 or hex encoding of either (43, 64) needs.
 */
const SHORTEST_SECRET_RUN = 32

/** Whether `text` could hold a token or a secret in any form: a `pet_live_`/`pet_test_` prefix, percent-encoding, or a long enough run of base64's alphabet. A loop: a pattern for the run retries from every character. */
function mayHoldSecret (text: string): boolean {
  if (text.includes('%') || HAS_PREFIX.test(text)) return true
  let run = 0
  for (let i = 0; i < text.length; i++) {
    run = isBase64Character(text.charCodeAt(i)) ? run + 1 : 0
    if (run >= SHORTEST_SECRET_RUN) return true
  }
  return false
}

/** Base64's and base64url's alphabets together, which hold hex's and base62's: `A-Z a-z 0-9 + / = _ -`. */
function isBase64Character (code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) ||
    code === 0x2b || code === 0x2f || code === 0x3d || code === 0x5f || code === 0x2d
}
