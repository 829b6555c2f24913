// Who may use the admin API, and how often (docs/KEYS.md: The admin API): every
// request needs `Authorization: Bearer ADMIN_TOKEN`, compared in constant
// time; wrong tokens are counted per address and refused past
// FAILURES_PER_MINUTE (docs/INTERNALS.md, section "Admin authentication").
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { LRUCache } from 'lru-cache'
import { Errors, type ErrorCode } from '../errors.js'
import { BEARER, authorizationHeaders } from '../keys/identify.js'

/** Wrong tokens an address may send in one minute. */
const FAILURES_PER_MINUTE = 10
/** Requests with the admin token an address may send in one minute (docs/KEYS.md: The admin API). */
export const ADMIN_REQUESTS_PER_MINUTE = 6000
/** Every error the token check can answer, so that every admin operation documents their statuses. */
export const ADMIN_AUTH_ANSWERS = ['invalid_admin_token', 'rate_limited'] as const satisfies readonly ErrorCode[]
/** Addresses remembered at once by each count; the least recently used go first. */
const ADDRESSES = 10_000
const MINUTE_MS = 60_000

interface AdminAuthOptions {
  token: string
  /** Unix milliseconds; injected so that tests control the minute. */
  now: () => number
  /** Default ADMIN_REQUESTS_PER_MINUTE; tests lower it. */
  perMinute?: number
}

/** A fixed one-minute window's count for one address. */
interface Window { since: number, count: number }

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

export default fp<AdminAuthOptions>(async function adminAuth (app, { token, now, perMinute = ADMIN_REQUESTS_PER_MINUTE }) {
  const expected = digest(token)
  const failures = new LRUCache<string, Window>({ max: ADDRESSES })
  const admitted = new LRUCache<string, Window>({ max: ADDRESSES })

  /** The address's window as of `at`: the stored one while its minute runs, else a new one. */
  const current = (windows: LRUCache<string, Window>, address: string, at: number): Window => {
    const window = windows.get(address)
    return window === undefined || at - window.since >= MINUTE_MS ? { since: at, count: 0 } : window
  }
  const secondsLeft = (window: Window, at: number): number => Math.max(1, Math.ceil((window.since + MINUTE_MS - at) / 1000))

  /** The admitted requests' limit, on every answer of the admin API, admitted or not. */
  const rateLimitHeaders = (reply: FastifyReply, window: Window): void => {
    reply.header('x-ratelimit-limit', String(perMinute))
    reply.header('x-ratelimit-remaining', String(Math.max(0, perMinute - window.count)))
    reply.header('x-ratelimit-reset', String(Math.ceil((window.since + MINUTE_MS) / 1000)))
  }

  app.addHook('onRequest', (request, reply, done) => {
    const at = now()
    const address = request.ip
    const header = request.headers.authorization
    const bearer = header === undefined ? null : BEARER.exec(header.trim())
    /** The bearer token; '' for `Bearer` alone, undefined for any other scheme. */
    const sent = bearer === null ? undefined : bearer[1]?.trim() ?? ''
    const refuse = (error: Error): void => {
      rateLimitHeaders(reply, current(admitted, address, at))
      reply.header('connection', 'close')
      done(error)
    }
    // Node keeps the first of several; which one the client meant is not ours to guess. Never compared, so never counted.
    if (authorizationHeaders(request.raw.rawHeaders) > 1) { refuse(Errors.manyAdminAuthorizations()); return }
    // No credential: what any page can make a browser send. Nothing was guessed, so nothing is counted.
    if (header === undefined || header.trim() === '' || sent === '') { refuse(Errors.adminTokenRequired()); return }
    if (sent !== undefined && timingSafeEqual(digest(sent), expected)) {
      const window = current(admitted, address, at)
      if (window.count >= perMinute) {
        rateLimitHeaders(reply, window)
        done(Errors.rateLimited(secondsLeft(window, at)))
        return
      }
      window.count++
      admitted.set(address, window)
      rateLimitHeaders(reply, window)
      done()
      return
    }
    const wrong = current(failures, address, at)
    if (wrong.count >= FAILURES_PER_MINUTE) { refuse(Errors.adminAttemptsSpent(secondsLeft(wrong, at))); return }
    wrong.count++
    failures.set(address, wrong)
    refuse(sent === undefined ? Errors.adminTokenRequired() : Errors.wrongAdminToken())
  })
}, { name: 'admin-auth' })
