// A TCP proxy on a loopback port that a test can freeze: connections stay
// open but nothing passes, as when the server behind it is stopped
// (SIGSTOP) or the network between them is cut. Only this test's clients go
// through it, so the server itself, shared with other tests, is untouched.
import { connect, createServer, type Server, type Socket } from 'node:net'

interface Pair { client: Socket, upstream: Socket }

export class TcpProxy {
  readonly #server: Server
  readonly #pairs = new Set<Pair>()
  #frozen = false

  private constructor (server: Server) {
    this.#server = server
  }

  static async start (targetPort: number): Promise<TcpProxy> {
    const server = createServer()
    const proxy = new TcpProxy(server)
    server.on('connection', (client) => proxy.#accept(client, targetPort))
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
    return proxy
  }

  get port (): number {
    const address = this.#server.address()
    if (address === null || typeof address === 'string') throw new Error('the proxy is not listening')
    return address.port
  }

  #accept (client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1')
    const pair = { client, upstream }
    this.#pairs.add(pair)
    const end = (): void => {
      this.#pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
    if (!this.#frozen) this.#flow(pair)
  }

  #flow ({ client, upstream }: Pair): void {
    client.pipe(upstream)
    upstream.pipe(client)
  }

  /** Nothing passes any more, either way; connections stay open and new ones are accepted. */
  freeze (): void {
    this.#frozen = true
    for (const { client, upstream } of this.#pairs) {
      client.unpipe(upstream)
      upstream.unpipe(client)
      client.pause()
      upstream.pause()
    }
  }

  /** Everything passes again, what waited included. */
  thaw (): void {
    this.#frozen = false
    for (const pair of this.#pairs) this.#flow(pair)
  }

  async close (): Promise<void> {
    for (const { client, upstream } of this.#pairs) {
      client.destroy()
      upstream.destroy()
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
