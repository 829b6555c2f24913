// The receiver the webhook rows deliver to: a node:http server on
// 127.0.0.1 in the benchmark's own process, so that its CPU time is never
// counted as the petstore's. It answers every delivery 204 and notes when
// each pet's `pet.created` first arrived; told to stall, it holds the
// deliveries unanswered (a receiver that has stopped taking them, without
// the failures and retries a closed port would cause) until released.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'

const POLL_MS = 5

export class WebhookReceiver {
  readonly url: string
  readonly #server: ReturnType<typeof createServer>
  /** performance.now() of each pet id's first delivery. */
  readonly #arrivals = new Map<number, number>()
  /** While stalled: the deliveries held, with their pet's id. */
  #held: Array<{ response: ServerResponse, id: number | undefined }> | undefined

  private constructor (server: ReturnType<typeof createServer>, port: number) {
    this.#server = server
    this.url = `http://127.0.0.1:${port}/hooks/petstore`
  }

  static async start (): Promise<WebhookReceiver> {
    const server = createServer()
    server.keepAliveTimeout = 60_000
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', resolve)
    })
    const receiver = new WebhookReceiver(server, (server.address() as AddressInfo).port)
    server.on('request', (request: IncomingMessage, response: ServerResponse) => { receiver.receive(request, response) })
    return receiver
  }

  receive (request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const at = performance.now()
      // Bench pets' ids stay far below 2^53: JSON.parse reads them exactly.
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string, data: { id?: number } }
      const id = event.type === 'pet.created' && typeof event.data.id === 'number' ? event.data.id : undefined
      if (this.#held !== undefined) {
        this.#held.push({ response, id })
        return
      }
      this.#arrived(id, at)
      response.writeHead(204).end()
    })
  }

  #arrived (id: number | undefined, at: number): void {
    if (id !== undefined && !this.#arrivals.has(id)) this.#arrivals.set(id, at)
  }

  /** From now, deliveries are held unanswered: one arrives when it is answered. */
  stall (): void {
    this.#held ??= []
  }

  /** Answers the held deliveries and every later one at once. */
  release (): void {
    const held = this.#held ?? []
    this.#held = undefined
    const now = performance.now()
    for (const { response, id } of held) {
      this.#arrived(id, now)
      response.writeHead(204).end()
    }
  }

  /** When pet `id`'s event first arrived (performance.now()), if it has. */
  arrival (id: number): number | undefined {
    return this.#arrivals.get(id)
  }

  /**
   * Waits until the events of every pet with an id in (`after`, `upTo`]
   * have arrived; the time (performance.now()) the last of them did.
   */
  async waitFor (after: number, upTo: number, timeoutMs: number, signal: AbortSignal): Promise<number> {
    const deadline = performance.now() + timeoutMs
    let next = after + 1
    let last = 0
    for (;;) {
      for (; next <= upTo; next++) {
        const at = this.#arrivals.get(next)
        if (at === undefined) break
        last = Math.max(last, at)
      }
      if (next > upTo) return last
      signal.throwIfAborted()
      if (performance.now() > deadline) {
        throw new Error(`webhook receiver: pet ${next}'s event had not arrived ${timeoutMs / 1000} s on (waiting for ${after + 1}…${upTo})`)
      }
      await delay(POLL_MS)
    }
  }

  async close (): Promise<void> {
    this.release()
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
