// A webhook receiver on 127.0.0.1, as a partner's would be: it records each
// delivery as it came (headers, the body's exact text) and answers with
// what the test tells it, 204 unless told otherwise.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
}

export class WebhookReceiver {
  readonly received: Received[] = []
  /** The statuses of the next answers, in order; 204 once they are spent. */
  readonly answers: number[] = []
  readonly #server: Server
  #port = 0

  constructor () {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        this.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') })
        response.writeHead(this.answers.shift() ?? 204).end()
      })
    })
  }

  /** Listens on `port` (0: any free one). */
  async listen (port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(port, '127.0.0.1', resolve))
    this.#port = (this.#server.address() as AddressInfo).port
    return this
  }

  get url (): string { return `http://127.0.0.1:${this.#port}/hooks` }

  /** The webhook-ids received, once each. */
  ids (): Set<string> {
    return new Set(this.received.map((delivery) => String(delivery.headers['webhook-id'])))
  }

  async close (): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}

/** What a receiver does with the `standardwebhooks` library: the payload, or the library's refusal thrown. */
export function verify (secret: string, delivery: Received): { type: string, timestamp: string, data: Record<string, unknown> } {
  const headers = {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature'])
  }
  return new Webhook(secret).verify(delivery.body, headers) as { type: string, timestamp: string, data: Record<string, unknown> }
}
