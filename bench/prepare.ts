// What a scenario needs from a running petstore before it is loaded, taken
// through its public interface only: a cursor deep in the table (cursors
// are signed, so the benchmark follows the service's own `Link` headers
// rather than make one), a key spent or banned, and one request to check
// that the load will get the answer it expects, or a key's one request in
// flight held open.
import { connect, type Socket } from 'node:net'
import { createKey, idsIn, linkTarget } from '../test/support/process.js'
import { awayFromMinuteEdge } from '../test/support/redis.js'
import type { LoadRequest } from './load.js'

const PAGE = 100
const MAX_EXHAUSTING_REQUESTS = 200

/** `petstore keys create --plan enterprise …` against `databaseUrl`; the token. */
export async function enterpriseKey (databaseUrl: string, name: string, perMinute: string, perDay: string, more: readonly string[] = []): Promise<string> {
  const { token } = await createKey({ DATABASE_URL: databaseUrl }, ['--plan', 'enterprise', '--name', name, '--per-minute', perMinute, '--per-day', perDay, ...more])
  return token
}

/**
 * Follows `Link: rel="next"` through `?status=STATUS&limit=100`, one page at
 * a time, until the pages passed reach `fromId`; the cursor found there.
 */
export async function deepCursor (origin: string, token: string, status: string, fromId: bigint, signal: AbortSignal): Promise<string> {
  let url = `${origin}/v1/pets?status=${status}&limit=${PAGE}`
  for (;;) {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`paging: GET ${url} answered ${response.status}: ${text}`)
    const link = linkTarget(response.headers.get('link'), 'next')
    const cursor = link === undefined ? null : new URL(link).searchParams.get('cursor')
    if (cursor === null) throw new Error(`paging: no next page before id ${fromId} (${url})`)
    // The last id, read as digits: a category id past 2^53 would not survive JSON.parse.
    const afterId = BigInt(idsIn(text).at(-1) ?? '0')
    if (afterId >= fromId) return cursor
    // Only the cursor is taken from the link: every request goes to our own 127.0.0.1 origin.
    url = `${origin}/v1/pets?status=${status}&limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`
  }
}

/** Sends `request` until the petstore answers with error `code` (rate_limited, api_key_banned). */
export async function spend (request: LoadRequest, code: string, signal: AbortSignal): Promise<void> {
  for (let i = 0; i < MAX_EXHAUSTING_REQUESTS; i++) {
    if (await errorCode(request, signal) === code) return
  }
  throw new Error(`${request.method} ${request.url} did not answer ${code} within ${MAX_EXHAUSTING_REQUESTS} requests`)
}

/**
 * Waits, if need be, until at least `seconds` are left in this UTC minute:
 * a limit by the minute lets a client in again at the next, which a row
 * measuring its refusals must not cross.
 */
export async function clearOfMinuteEnd (seconds: number): Promise<void> {
  if (seconds > 55) throw new Error(`a row of ${seconds} s cannot stay within one minute: measure it with a shorter --duration`)
  await awayFromMinuteEdge(seconds * 1000)
}

/** One request, before the load: it must get the status the load expects, and, for an error, the code. */
export async function expectAnswer (request: LoadRequest, code: string | undefined, signal: AbortSignal): Promise<void> {
  const response = await send(request, signal)
  const text = await response.text()
  const answered = response.status === request.expect && (code === undefined || codeOf(text) === code)
  if (!answered) throw new Error(`${request.method} ${request.url} answered ${response.status}, not ${request.expect}${code === undefined ? '' : ` ${code}`}: ${text.slice(0, 500)}`)
}

async function errorCode (request: LoadRequest, signal: AbortSignal): Promise<string | undefined> {
  return codeOf(await (await send(request, signal)).text())
}

async function send (request: LoadRequest, signal: AbortSignal): Promise<Response> {
  const headers = request.forwardedFor === true ? { ...request.headers, 'x-forwarded-for': '10.255.0.1' } : request.headers
  return await fetch(request.url, { method: request.method, headers, body: request.body ?? null, signal })
}

function codeOf (text: string): string | undefined {
  return /"code":"([a-z_]+)"/.exec(text)?.[1]
}

/**
 * Holds a key's one request in flight (its cap of 1): a POST whose body
 * never comes, opened again if the service ends it (at its request timeout),
 * until `release`. Every other request of that key is then refused
 * `concurrency_limited`, which is what the row measures.
 */
export async function holdSlot (origin: string, token: string): Promise<{ release: () => void }> {
  const { hostname, port } = new URL(origin)
  let socket: Socket | undefined
  let released = false
  const open = (): void => {
    if (released) return
    const held = connect(Number(port), hostname)
    held.on('error', () => {})
    held.once('close', () => { if (socket === held) open() })
    held.write(`POST /v1/pets HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{`)
    socket = held
  }
  open()
  // The gate counts it on its headers: give them time to arrive and be read.
  await new Promise((resolve) => setTimeout(resolve, 200))
  return {
    release: () => {
      released = true
      socket?.destroy()
      socket = undefined
    }
  }
}
