// The edge: the HTTP server itself (Fastify's `serverFactory`), which answers,
// with the Error body, what Node would otherwise answer with a bare status line
// or not at all: a request its parser refuses, CONNECT, an unroutable method,
// in the order of pipelined requests (docs/INTERNALS.md, section "Edge").
import { randomUUID } from 'node:crypto'
import { METHODS, Server, STATUS_CODES, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { Errors, errorBody, type ApiError } from '../errors.js'
import type { CountAddress } from '../limits/limit.js'
import { addressSubject } from '../limits/subject.js'

/**
 * A slow client cannot hold a connection: headers within `headersMs`, the whole request
 * within `requestMs` (checked every `checkEveryMs`); idle keep-alive ones close after `keepAliveMs`,
 * longer than load balancers' usual 60 s so they close first; `closeGraceMs`: EdgeServer.close.
 * https://nodejs.org/api/http.html#serverheaderstimeout
 */
export interface Timeouts {
  headersMs: number
  requestMs: number
  keepAliveMs: number
  idleSocketMs: number
  checkEveryMs: number
  closeGraceMs: number
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 65_000,
  idleSocketMs: 120_000,
  checkEveryMs: 1_000,
  closeGraceMs: 1_000
}

/**
 * How many connections the server holds at once: all told, and from one
 * client as the limiter counts it (IPv6 by /64); no per-client cap behind
 * trusted proxies. Sized in docs/INTERNALS.md, section "Edge".
 */
export interface ConnectionCaps {
  total: number
  perAddress: number | undefined
}

export const DEFAULT_CONNECTION_CAPS: ConnectionCaps = {
  total: 10_000,
  perAddress: 1_024
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void

export interface Edge {
  /** Fastify's `serverFactory`. */
  serverFactory: (handler: Handler) => Server
  /** Fastify's `clientErrorHandler`: Fastify adds it to the server itself, so it is given there rather than added twice. */
  clientError: (error: Error & { code?: string }, socket: Socket) => void
}

export function createEdge ({ countAddress, timeouts, caps }: { countAddress: CountAddress, timeouts: Timeouts, caps: ConnectionCaps }): Edge {
  const answerRaw = createRawAnswerer(countAddress)
  return {
    serverFactory: (handler) => {
      const server = new EdgeServer({
        headersTimeout: timeouts.headersMs,
        requestTimeout: timeouts.requestMs,
        keepAliveTimeout: timeouts.keepAliveMs,
        connectionsCheckingInterval: timeouts.checkEveryMs,
        // A request without Host is refused by the framing check (plugins/framing.ts), with an Error body.
        requireHostHeader: false
      }, timeouts.closeGraceMs)
      server.setTimeout(timeouts.idleSocketMs)
      const tracker = new ConnectionTracker(caps)
      server.on('connection', (socket: Socket) => { tracker.accept(socket) })
      const take = (request: IncomingMessage, response: ServerResponse): void => {
        owe(request, response, tracker)
        if (isRoutable(request)) handler(request, response)
        else refuseUnroutable(request, response, countAddress)
      }
      server.on('request', take)
      // Without a listener Node answers 417 itself; with one, the request is ours (plugins/framing.ts).
      server.on('checkExpectation', take)
      // Without a listener Node closes the connection without a word.
      server.on('connect', (_request: IncomingMessage, socket: Duplex) => { answerRaw(socket, Errors.notAProxy()) })
      return server
    },
    clientError: (error, socket) => { answerRaw(socket, (PARSER_ERRORS[error.code ?? ''] ?? Errors.invalidHttp)()) }
  }
}

/**
 * Holds the server to its connection caps. At the total, the connection idle
 * longest is closed to make room, so that clients holding idle connections
 * cannot lock a new one out (Node's `maxConnections` would refuse the new one).
 */
class ConnectionTracker {
  /** Each connection held, and its client (undefined without a per-client cap). */
  readonly #held = new Map<Socket, string | undefined>()
  readonly #perClient = new Map<string, number>()
  /** Idle connections, longest idle first (a Map keeps the order of insertion), and the bytes each had read then. */
  readonly #idle = new Map<Socket, number>()

  constructor (private readonly caps: ConnectionCaps) {}

  accept (socket: Socket): void {
    const cap = this.caps.perAddress
    const client = cap === undefined ? undefined : addressSubject(socket.remoteAddress ?? '')
    if (client !== undefined && cap !== undefined && (this.#perClient.get(client) ?? 0) >= cap) {
      socket.destroy()
      return
    }
    if (this.#held.size >= this.caps.total) {
      const idlest = this.#idlest()
      if (idlest === undefined) {
        socket.destroy()
        return
      }
      this.#release(idlest)
      idlest.destroy()
    }
    this.#held.set(socket, client)
    if (client !== undefined) this.#perClient.set(client, (this.#perClient.get(client) ?? 0) + 1)
    this.#idle.set(socket, socket.bytesRead)
    socket.once('close', () => { this.#release(socket) })
  }

  /** A request has arrived on the connection. */
  busy (socket: Duplex): void {
    this.#idle.delete(socket as Socket)
  }

  /** The connection has answered all it was asked, and waits for its next request. */
  idle (socket: Duplex): void {
    const net = socket as Socket
    if (this.#held.has(net)) this.#idle.set(net, net.bytesRead)
  }

  /** The connection idle longest whose next request has not begun to arrive (Node's parser reads it unseen). */
  #idlest (): Socket | undefined {
    for (const [socket, read] of this.#idle) if (socket.bytesRead === read) return socket
    return undefined
  }

  #release (socket: Socket): void {
    if (!this.#held.has(socket)) return
    const client = this.#held.get(socket)
    this.#held.delete(socket)
    this.#idle.delete(socket)
    if (client === undefined) return
    const left = (this.#perClient.get(client) ?? 1) - 1
    if (left === 0) this.#perClient.delete(client)
    else this.#perClient.set(client, left)
  }
}

/**
 * Whether a request declared a body that has not all been read: answered so,
 * its connection must close, or Node would read and throw away the whole
 * declared body before the next request. Light-my-request's requests have no
 * `complete`, and are never closed.
 */
export function bodyUnread (request: IncomingMessage): boolean {
  const declared = request.headers['transfer-encoding'] !== undefined ||
    (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0')
  return declared && request.complete === false
}

/**
 * Stops accepting at once, but gives idle connections `graceMs` for a request
 * already in their socket, which Node's close() would destroy unanswered
 * (docs/INTERNALS.md, section "Edge"). Fastify leaves them to it
 * (`forceCloseConnections: false`).
 */
class EdgeServer extends Server {
  constructor (options: ServerOptions, private readonly graceMs: number) {
    super(options)
    // A client's half-close ends what it sends, not what it waits for
    // (https://www.rfc-editor.org/rfc/rfc9112#section-9.6): Node would end the
    // socket at the client's FIN and drop the answers still owed, their
    // requests carried out all the same; with this, it closes after the last.
    Object.assign(this, { httpAllowHalfOpen: true })
  }

  override close (callback?: (error?: Error) => void): this {
    // http.Server's close, but for closing the idle connections, which waits
    // for the grace: Node's own method is shadowed for that call alone.
    Object.defineProperty(this, 'closeIdleConnections', { value: () => {}, configurable: true })
    try {
      super.close(callback)
    } finally {
      Reflect.deleteProperty(this, 'closeIdleConnections')
    }
    setTimeout(() => { this.closeIdleConnections() }, this.graceMs).unref()
    return this
  }
}

/**
 * Methods outside `http.METHODS` (Node's parser takes HTTP/2's `PRI`) are
 * refused here as not HTTP/1.1: Fastify would answer them before any hook,
 * without the rate-limit headers.
 */
const ROUTABLE = new Set(METHODS)

function isRoutable (request: IncomingMessage): boolean {
  return request.method !== undefined && ROUTABLE.has(request.method)
}

function refuseUnroutable (request: IncomingMessage, response: ServerResponse, countAddress: CountAddress): void {
  const answer = Errors.invalidHttp()
  const send = (headers: Record<string, string>): void => {
    response.writeHead(answer.status, { ...headers, 'content-type': 'application/json; charset=utf-8', ...JSON_ANSWER_HEADERS, 'x-request-id': randomUUID(), connection: 'close' })
    response.end(JSON.stringify(errorBody(answer)))
  }
  countAddress(request.socket.remoteAddress ?? '').then(send, () => { send({}) })
}

/** On every response of the service (app.ts says why). */
export const ANSWER_HEADERS = { 'x-content-type-options': 'nosniff' }
/** On every JSON response: the edge's own, and those Fastify sends (app.ts). */
export const JSON_ANSWER_HEADERS = { ...ANSWER_HEADERS, 'cache-control': 'no-store' }
const RAW_HEADERS = Object.entries(JSON_ANSWER_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('')

const PARSER_ERRORS: Record<string, () => ApiError> = {
  HPE_HEADER_OVERFLOW: Errors.headersTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: Errors.requestTimeout
}

/**
 * How much more of a socket the server takes in once its parser has refused
 * it; past it, the connection is cut, rather than the parser reading and
 * throwing away all the client sends in the linger.
 */
const READ_AFTER_ANSWER = 64 * 1024

const readFrom = new WeakMap<Duplex, number>()

/** Stops taking in a socket's bytes: its request has been refused, and the rest of it is not wanted. */
function stopReading (socket: Duplex): void {
  readFrom.set(socket, (socket as Partial<Socket>).bytesRead ?? 0)
  // Pausing the socket stops Node's parser reading it (readStop), while the answer is still written.
  socket.pause()
}

/** Cuts a refused socket that was read again (a request's body reader resumed it) past READ_AFTER_ANSWER. */
function readPastBudget (socket: Duplex): void {
  const from = readFrom.get(socket)
  const read = (socket as Partial<Socket>).bytesRead
  if (from !== undefined && read !== undefined && read - from > READ_AFTER_ANSWER) socket.destroy()
}

/** Answers, by hand, a socket that never became a request: the Error body, that address's rate-limit headers, then close. */
type AnswerRaw = (socket: Duplex, answer: ApiError) => void

/** How long a socket answered by hand is kept open for its client to read the answer and close. */
const LINGER_MS = 1_000

/**
 * Responses each connection still owes: a refusal that follows pipelined
 * requests goes out after their answers, or it would take the place of the
 * first one's (docs/INTERNALS.md, section "Edge").
 */
interface Connection {
  owed: Set<IncomingMessage>
  /** The connection's latest request and its response (two fields, not an object made for each request). */
  request: IncomingMessage | undefined
  response: ServerResponse | undefined
  then: (() => void) | undefined
}

const connections = new WeakMap<Duplex, Connection>()

/** Counts a request's response as owed on its connection until it has been sent (or the connection lost). */
function owe (request: IncomingMessage, response: ServerResponse, tracker: ConnectionTracker): void {
  const socket = request.socket
  let connection = connections.get(socket)
  if (connection === undefined) {
    connection = { owed: new Set(), request: undefined, response: undefined, then: undefined }
    connections.set(socket, connection)
  }
  connection.request = request
  connection.response = response
  connection.owed.add(request)
  tracker.busy(socket)
  // A response closes once: `once` would wrap the listener in one more closure for each request.
  response.on('close', () => {
    connection.owed.delete(request)
    if (connection.owed.size === 0) tracker.idle(socket)
    if (waitsFor(connection.owed)) return
    const then = connection.then
    connection.then = undefined
    then?.()
  })
}

function waitsFor (owed: Set<IncomingMessage>): boolean {
  for (const request of owed) if (request.complete) return true
  return false
}

/** True when the request being refused (the latest, not all arrived) has been given its answer already. */
function refusedWasAnswered (socket: Duplex): boolean {
  const { request, response } = connections.get(socket) ?? {}
  return request !== undefined && response !== undefined && !request.complete && (response.headersSent || response.writableEnded)
}

/** Closes the connection once the latest response has gone out whole, as Node does after a last response. */
function closeAfterLatest (socket: Duplex): void {
  const response = connections.get(socket)?.response
  const close = (): void => {
    const net = socket as Partial<Socket>
    if (typeof net.destroySoon === 'function') net.destroySoon()
    else socket.end()
  }
  if (response === undefined || response.closed) close()
  else response.once('close', close)
}

/**
 * Runs `answer` once the answers owed before a refusal have gone, or
 * `close` when the refused request has had its own answer by then (the
 * gate answers 401 without reading the body, possibly while earlier
 * answers were still going).
 */
function whenOwedSent (socket: Duplex, answer: () => void, close: () => void): void {
  const connection = connections.get(socket)
  const then = (): void => { if (refusedWasAnswered(socket)) close(); else answer() }
  if (connection === undefined || !waitsFor(connection.owed)) then()
  else connection.then = then
}

/**
 * Answers written to the socket by hand (Node's http cannot answer a socket
 * that never became a request), in the Error shape, after the answers owed.
 * The path is not known: each is counted against the client's address and
 * carries that limit's headers, as /v1 responses do.
 */
function createRawAnswerer (countAddress: CountAddress): AnswerRaw {
  // A parser that has failed keeps failing on whatever follows: one answer per connection.
  const answered = new WeakSet<Duplex>()
  return (socket, answer) => {
    // Node's parser calls again for each later read: past the budget the connection is cut.
    if (answered.has(socket)) {
      readPastBudget(socket)
      return
    }
    answered.add(socket)
    stopReading(socket)
    const status = answer.status
    const body = JSON.stringify(errorBody(answer))
    const write = (headers: Record<string, string>): void => {
      if (refusedWasAnswered(socket)) {
        closeAfterLatest(socket)
        return
      }
      if (!socket.writable) {
        socket.destroy()
        return
      }
      const extra = Object.entries({ ...answer.headers, ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${RAW_HEADERS}${extra}Connection: close\r\n\r\n${body}`)
      // end() only half-closes, and a client that never closes its side would
      // hold the socket for the idle timeout: it gets LINGER_MS to read the answer.
      // Not unref'd: the paused socket (stopReading) no longer keeps the process up.
      const linger = setTimeout(() => socket.destroy(), LINGER_MS)
      socket.once('close', () => clearTimeout(linger))
    }
    const address = (socket as Partial<Socket>).remoteAddress ?? ''
    // One answer per request: a second one would pass for the next request's.
    whenOwedSent(socket, () => { countAddress(address).then(write, () => write({})) }, () => { closeAfterLatest(socket) })
  }
}
