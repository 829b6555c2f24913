// Who may use the admin API: whoever sends ADMIN_TOKEN (README: Managing
// keys). Every request of the scope this is registered in needs
// `Authorization: Bearer ADMIN_TOKEN`; API keys are not accepted here,
// and the public port never serves these routes.
//
// The token is compared in constant time, on the SHA-256 of each side so
// that the length of a guess tells nothing either. Wrong tokens are
// counted per client address: past FAILURES_PER_MINUTE in a minute, that
// address gets 429 for the rest of the minute, whatever it sends, so a
// token cannot be guessed by brute force however long it runs. Counted in
// this instance's memory: the admin listener is for the operators' own
// network (ADMIN_HOST is loopback unless set), where a shared store would
// add a dependency to every admin request for little.
import { createHash, timingSafeEqual } from 'node:crypto'
import fp from 'fastify-plugin'
import { LRUCache } from 'lru-cache'
import { Errors } from '../errors.js'
import { BEARER } from '../access/identify.js'

/** Wrong tokens an address may send in one minute. */
const FAILURES_PER_MINUTE = 10
/** Addresses remembered at once; the least recently used go first. */
const ADDRESSES = 10_000
const MINUTE_MS = 60_000

interface AdminAuthOptions {
  token: string
  /** Unix milliseconds; injected so that tests control the minute. */
  now: () => number
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

export default fp<AdminAuthOptions>(async function adminAuth (app, { token, now }) {
  const expected = digest(token)
  /** Failures per address in the minute that started at `since`. */
  const failures = new LRUCache<string, { since: number, count: number }>({ max: ADDRESSES })

  app.addHook('onRequest', (request, reply, done) => {
    const at = now()
    const record = failures.get(request.ip)
    const spent = record !== undefined && at - record.since < MINUTE_MS && record.count >= FAILURES_PER_MINUTE
    if (spent) {
      reply.header('connection', 'close')
      done(Errors.adminAttemptsSpent(Math.max(1, Math.ceil((record.since + MINUTE_MS - at) / 1000))))
      return
    }
    const header = request.headers.authorization
    const sent = header === undefined ? undefined : BEARER.exec(header.trim())?.[1]?.trim()
    if (sent !== undefined && sent !== '' && timingSafeEqual(digest(sent), expected)) {
      done()
      return
    }
    const current = record === undefined || at - record.since >= MINUTE_MS ? { since: at, count: 0 } : record
    current.count++
    failures.set(request.ip, current)
    reply.header('connection', 'close')
    done(sent === undefined || sent === '' ? Errors.adminTokenRequired() : Errors.wrongAdminToken())
  })
}, { name: 'admin-auth' })
