// One log line per request (docs/OPERATING.md: Logs), written when its
// response has gone, as Fastify's LogController, whose two lines per request
// become this one (the first kept at `debug`). A 5xx is logged with its cause.
// https://fastify.dev/docs/latest/Reference/Server/#logcontroller
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { holdsSecret, loggableUrl } from './loggable-url.js'
import { traceIdOf } from './tracing-hooks.js'

/** A client's request id: 1 to 128 visible ASCII characters, so that it is safe in a header and a log line. */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/** Makes a request's id: the client's when usable; one that may hold a token or one of `secrets` is not, since ids are logged. */
export function requestIdMaker (secrets: readonly string[] = []): (request: IncomingMessage) => string {
  return (request) => {
    const theirs = request.headers['x-request-id']
    return typeof theirs === 'string' && CLIENT_REQUEST_ID.test(theirs) && !holdsSecret(theirs, secrets) ? theirs : randomUUID()
  }
}

/** The levels at which a `debug` line is written. */
const WRITES_DEBUG = new Set(['debug', 'trace'])

export class RequestLog extends LogController {
  /** `secrets`: values besides API tokens that no log line may hold (ADMIN_TOKEN). */
  constructor (private readonly secrets: readonly string[] = []) {
    super({ requestIdLogLabel: 'requestId' })
  }

  /** At `debug` only: a line when a request arrives, to find the ones that never finish. */
  override incomingRequest (request: FastifyRequest): void {
    // Fastify calls this for every request: at `info` the line is dropped, and so should be the token scan of its URL.
    if (!WRITES_DEBUG.has(request.log.level)) return
    request.log.debug({ method: request.method, url: loggableUrl(request.url, this.secrets) }, 'request received')
  }

  /** The not-found handler answers, and the line is written like any other. */
  override routeNotFound (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const status = reply.statusCode
    const line = {
      keyId: request.access?.key.id,
      method: request.method,
      route: request.routeOptions.url,
      url: loggableUrl(request.url, this.secrets),
      status,
      code: reply.errorCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      // Only when tracing is on: the trace this request's span belongs to.
      traceId: traceIdOf(request)
    }
    // A shed request (plugins/shed.ts) is a refusal, as a 429 is: nothing failed.
    if (status >= 500 && reply.errorCode !== 'overloaded') request.log.error({ ...line, err: reply.failure ?? error }, 'request failed')
    // The response itself failed: most often, the client went away mid-answer.
    else if (error !== null && error !== undefined) request.log.warn({ ...line, err: error }, 'response not delivered')
    else request.log.info(line, 'request completed')
  }
}
