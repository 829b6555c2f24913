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
import { Connections, type ConnectionCaps } from './connections.js'

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

type Handler = (request: IncomingMessage, response: ServerResponse) => void

export interface Edge {
  /** Fastify's `serverFactory`. */
  serverFactory: (handler: Handler) => Server
  /** Fastify's `clientErrorHandler`: Fastify adds it to the server itself, so it is given there rather than added twice. */
  clientError: (error: Error & { code?: string }, socket: Socket) => void
}

export function createEdge ({ countAddress, timeouts, caps }: { countAddress: CountAddress, timeouts: Timeouts, caps: ConnectionCaps }): Edge {
  // One server per edge: the connections it holds, and what each is owed.
  const connections = new Connections(caps)
  const answerRaw = createRawAnswerer(countAddress, connections)
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
      server.on('connection', (socket: Socket) => { connections.accept(socket) })
      const take = (request: IncomingMessage, response: ServerResponse): void => {
        connections.owe(request, response)
        if (isRoutable(request)) handler(request, response)
        else refuseUnroutable(request, response, countAddress)
      }
      server.on('request', take)
      // Without a listener Node writes the 100 at once, out of turn for a pipelined request (continueInTurn).
      server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
        continueInTurn(response)
        take(request, response)
      })
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
 * A request's `100 Continue`, as Node writes it when nothing listens for
 * `checkContinue`, but in the request's turn. For a request pipelined
 * behind one still being answered, Node's 100 waits in the response's
 * buffer; an answer made before the request's turn comes then goes out
 * with its status line ahead of that 100 and its body after it, and the
 * client reads the 100 as body (Node 20 to 26; docs/INTERNALS.md, "Edge").
 * So such a request gets its 100 when its turn comes, or none if its
 * answer is made by then: a final status answers the expectation
 * (RFC 9110 §10.1.1).
 */
function continueInTurn (response: ServerResponse): void {
  // A response is given its socket ('socket') once the answers before it have gone.
  if (response.socket !== null) response.writeContinue()
  else response.once('socket', () => { if (!response.headersSent) response.writeContinue() })
}

/**
 * Stops accepting at once, but gives idle connections `graceMs` for a request
 * already in their socket, which Node's close() would destroy unanswered
 * (docs/INTERNALS.md, section "Edge"). Fastify leaves them to it
 * (`forceCloseConnections: false`).
 */
class EdgeServer extends Server {
  /** True inside close(): Node's close calls closeIdleConnections, which waits for the grace then. */
  #closing = false

  constructor (options: ServerOptions, private readonly graceMs: number) {
    super(options)
    // A client's half-close ends what it sends, not what it waits for
    // (https://www.rfc-editor.org/rfc/rfc9112#section-9.6): Node would end the
    // socket at the client's FIN and drop the answers still owed, their
    // requests carried out all the same; with this, it closes after the last.
    Object.assign(this, { httpAllowHalfOpen: true })
  }

  override close (callback?: (error?: Error) => void): this {
    this.#closing = true
    try {
      super.close(callback)
    } finally {
      this.#closing = false
    }
    setTimeout(() => { this.closeIdleConnections() }, this.graceMs).unref()
    return this
  }

  override closeIdleConnections (): void {
    if (!this.#closing) super.closeIdleConnections()
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

/** Answers, by hand, a socket that never became a request: the Error body, that address's rate-limit headers, then close. */
type AnswerRaw = (socket: Duplex, answer: ApiError) => void

/** How long a socket answered by hand is kept open for its client to read the answer and close. */
const LINGER_MS = 1_000

/**
 * Answers written to the socket by hand (Node's http cannot answer a socket
 * that never became a request), in the Error shape, after the answers owed.
 * The path is not known: each is counted against the client's address and
 * carries that limit's headers, as /v1 responses do.
 */
function createRawAnswerer (countAddress: CountAddress, connections: Connections): AnswerRaw {
  return (socket, answer) => {
    // Node's parser calls again for each later read: one answer per connection.
    if (!connections.refuse(socket)) return
    const status = answer.status
    const body = JSON.stringify(errorBody(answer))
    const write = (headers: Record<string, string>): void => {
      if (connections.refusedWasAnswered(socket)) {
        connections.closeAfterLatest(socket)
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
    connections.whenOwedSent(socket, () => { countAddress(address).then(write, () => write({})) }, () => { connections.closeAfterLatest(socket) })
  }
}
