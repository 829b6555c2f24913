// What the edge (edge.ts) knows of each connection it holds, in one place:
// the caps it is held to, whether it is idle, the answers it is still owed,
// and how much more it may send once refused (docs/INTERNALS.md, section
// "Edge"). One instance per server; a connection's state goes with it.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { addressSubject } from '../limits/subject.js'

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

/**
 * How much more of a socket the server takes in once its parser has refused
 * it; past it, the connection is cut, rather than the parser reading and
 * throwing away all the client sends in the linger.
 */
const READ_AFTER_REFUSAL = 64 * 1024

interface Connection {
  /** Its client, as the per-client cap counts it (undefined without that cap). */
  readonly client: string | undefined
  /** Requests whose responses have not gone yet: a refusal after pipelined requests goes after their answers. */
  readonly owed: Set<IncomingMessage>
  /** The latest request and its response (two fields, not an object made for each request). */
  request: IncomingMessage | undefined
  response: ServerResponse | undefined
  /** What runs once the owed answers have gone: the refusal's own. */
  then: (() => void) | undefined
  /** Bytes read when the parser refused the connection (undefined until then): one refusal each, and a budget after it. */
  refusedAt: number | undefined
}

/**
 * The connections a server holds. At the total, the connection idle
 * longest is closed to make room, so that clients holding idle connections
 * cannot lock a new one out (Node's `maxConnections` would refuse the new one).
 */
export class Connections {
  readonly #held = new Map<Socket, Connection>()
  readonly #perClient = new Map<string, number>()
  /** Idle connections, longest idle first (a Map keeps the order of insertion), and the bytes each had read then. */
  readonly #idle = new Map<Socket, number>()

  constructor (private readonly caps: ConnectionCaps) {}

  /** A new connection: held, or destroyed when over a cap. */
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
    this.#held.set(socket, { client, owed: new Set(), request: undefined, response: undefined, then: undefined, refusedAt: undefined })
    if (client !== undefined) this.#perClient.set(client, (this.#perClient.get(client) ?? 0) + 1)
    this.#idle.set(socket, socket.bytesRead)
    socket.once('close', () => { this.#release(socket) })
  }

  /**
   * Counts a request's response as owed on its connection until it has been
   * sent (or the connection lost). A request on a connection the server does
   * not hold (light-my-request's) owes nothing: it is never pipelined.
   */
  owe (request: IncomingMessage, response: ServerResponse): void {
    const socket = request.socket
    const connection = this.#held.get(socket)
    if (connection === undefined) return
    connection.request = request
    connection.response = response
    connection.owed.add(request)
    this.#idle.delete(socket)
    // A response closes once: `once` would wrap the listener in one more closure for each request.
    response.on('close', () => {
      connection.owed.delete(request)
      if (connection.owed.size === 0 && this.#held.has(socket)) this.#idle.set(socket, socket.bytesRead)
      if (waitsFor(connection.owed)) return
      const then = connection.then
      connection.then = undefined
      then?.()
    })
  }

  /**
   * Marks a connection refused by the parser and stops taking in its bytes.
   * False when it was refused already: a parser that has failed keeps
   * failing on whatever follows, and gets one answer; past the budget the
   * connection is cut.
   */
  refuse (socket: Duplex): boolean {
    const connection = this.#held.get(socket as Socket)
    const read = (socket as Partial<Socket>).bytesRead ?? 0
    if (connection === undefined) {
      // Not held: already closed, or never accepted. Nothing to owe, and nothing more to read.
      socket.destroy()
      return false
    }
    if (connection.refusedAt !== undefined) {
      // Read again (a request's body reader resumed it): cut past the budget.
      if (read - connection.refusedAt > READ_AFTER_REFUSAL) socket.destroy()
      return false
    }
    connection.refusedAt = read
    // Pausing the socket stops Node's parser reading it (readStop), while the answer is still written.
    socket.pause()
    return true
  }

  /**
   * Runs `answer` once the answers owed before a refusal have gone, or
   * `close` when the refused request has had its own answer by then (the
   * gate answers 401 without reading the body, possibly while earlier
   * answers were still going).
   */
  whenOwedSent (socket: Duplex, answer: () => void, close: () => void): void {
    const connection = this.#held.get(socket as Socket)
    const then = (): void => { if (this.refusedWasAnswered(socket)) close(); else answer() }
    if (connection === undefined || !waitsFor(connection.owed)) then()
    else connection.then = then
  }

  /** True when the request being refused (the latest, not all arrived) has been given its answer already. */
  refusedWasAnswered (socket: Duplex): boolean {
    const { request, response } = this.#held.get(socket as Socket) ?? {}
    return request !== undefined && response !== undefined && !request.complete && (response.headersSent || response.writableEnded)
  }

  /** Closes the connection once the latest response has gone out whole, as Node does after a last response. */
  closeAfterLatest (socket: Duplex): void {
    const response = this.#held.get(socket as Socket)?.response
    const close = (): void => {
      const net = socket as Partial<Socket>
      if (typeof net.destroySoon === 'function') net.destroySoon()
      else socket.end()
    }
    if (response === undefined || response.closed) close()
    else response.once('close', close)
  }

  /** The connection idle longest whose next request has not begun to arrive (Node's parser reads it unseen). */
  #idlest (): Socket | undefined {
    for (const [socket, read] of this.#idle) if (socket.bytesRead === read) return socket
    return undefined
  }

  #release (socket: Socket): void {
    const connection = this.#held.get(socket)
    if (connection === undefined) return
    this.#held.delete(socket)
    this.#idle.delete(socket)
    const client = connection.client
    if (client === undefined) return
    const left = (this.#perClient.get(client) ?? 1) - 1
    if (left === 0) this.#perClient.delete(client)
    else this.#perClient.set(client, left)
  }
}

/** Whether an answer is still owed to a request that has arrived whole, before the refusal's. */
function waitsFor (owed: Set<IncomingMessage>): boolean {
  for (const request of owed) if (request.complete) return true
  return false
}
