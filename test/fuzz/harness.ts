// What every fuzz test shares: the seed (printed, and taken from the
// environment to replay a run), the figures a run reports, and the
// product rules of docs/API.md (what a client must know) that hold for
// every response besides what the OpenAPI document says.
import type fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { isApiPath } from '../../src/plugins/gate.js'
import { parse } from 'lossless-json'
import { exactInteger, receivedOf, type OpenApiChecker, type ReceivedResponse } from '../support/openapi-check.js'
import type { SentRequest as GeneratedRequest } from './requests.js'

/**
 * `PETSTORE_FUZZ_SEED` (and `PETSTORE_FUZZ_PATH`, from a failure's report)
 * replay a run; otherwise each run has a seed of its own, printed first.
 */
export function fuzzParameters<T> (numRuns: number): fc.Parameters<T> & { seed: number } {
  const seed = process.env.PETSTORE_FUZZ_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.PETSTORE_FUZZ_SEED)
  const path = process.env.PETSTORE_FUZZ_PATH
  return {
    seed,
    numRuns,
    // A failure is replayed along the shrunk path fast-check prints, with this seed.
    ...(path === undefined ? {} : { path, endOnFailure: true })
  }
}

/**
 * PETSTORE_FUZZ_KEEP_GOING=1: every request of the run is sent and each
 * failure counted, instead of stopping (and shrinking) at the first.
 */
export const KEEP_GOING = process.env.PETSTORE_FUZZ_KEEP_GOING === '1'

/** A generated request sent through `inject`: its answer, and the same as the checker reads it. */
export async function injectSent (app: FastifyInstance, sent: GeneratedRequest): Promise<{ response: LightMyRequestResponse, received: ReceivedResponse }> {
  const response = await app.inject({
    method: sent.method as 'GET',
    url: sent.url,
    headers: sent.headers,
    remoteAddress: sent.remoteAddress,
    ...(sent.payload === undefined ? {} : { payload: sent.payload })
  })
  return { response, received: receivedOf(response) }
}

/** The figures of a run: requests sent, statuses seen, 5xx, responses the document or the rules refuse. */
export class Figures {
  requests = 0
  readonly statuses = new Map<number, number>()
  readonly operations = new Map<string, number>()
  serverErrors = 0
  failures = 0
  /** Requests the server closed the connection on without answering (after an earlier one on it was refused). */
  unanswered = 0
  /** Each kind of problem (its text without the values in it), and how often it was seen. */
  readonly #kinds = new Map<string, { count: number, example: string }>()

  record ({ operation, problems }: Verdict, status: number): void {
    this.requests++
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    const name = operation ?? 'no operation'
    this.operations.set(name, (this.operations.get(name) ?? 0) + 1)
    if (status >= 500) this.serverErrors++
    if (problems.length > 0) {
      this.failures++
      for (const problem of problems) {
        const kind = problem.replace(/^[A-Z]+ \S*/, 'REQUEST').replace(/"(?:[^"\\]|\\.)*"/g, '"…"').replace(/\d+/g, 'N').slice(0, 160)
        const seen = this.#kinds.get(kind)
        if (seen === undefined) this.#kinds.set(kind, { count: 1, example: problem })
        else seen.count++
      }
    }
  }

  summary (title: string, seed: number): string {
    const sorted = <K>(map: Map<K, number>): string => [...map].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([k, n]) => `${String(k)}: ${n}`).join(', ')
    return [
      `${title}: seed ${seed}`,
      `  requests answered: ${this.requests}${this.unanswered > 0 ? `, not answered: ${this.unanswered}` : ''}`,
      `  statuses: ${sorted(this.statuses)}`,
      `  operations: ${sorted(this.operations)}`,
      `  5xx: ${this.serverErrors}, validation failures: ${this.failures}`,
      ...[...this.#kinds.values()].sort((a, b) => b.count - a.count).slice(0, 20).map(({ count, example }) => `  ${count} × ${example.slice(0, 1500)}`)
    ].join('\n')
  }
}

const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']

/** What the rules need of a request, whether generated (requests.ts) or written to a raw socket. */
type SentRequest = Pick<GeneratedRequest, 'method' | 'url' | 'headers' | 'payload'>

interface RuleOptions {
  /** The router's longest path parameter: a longer one is answered before any route is chosen. */
  maxParamLength: number
  /** The instance's own address, ending in /v1: every absolute URL it writes starts with it (docs/CONFIGURATION.md). */
  baseUrl: string
}

/**
 * The rules of docs/API.md that hold for every response, whatever the document
 * says (docs/API.md): no 5xx (Errors: only for a fault
 * on our side, never for a request); the Error body on every error, with
 * `status` repeating the HTTP status (Errors); the rate-limit headers on
 * every answer under /v1 (Rate limits); the deprecation headers on every
 * answer of GET /pets/{petId} (The deprecated operation); every URL in a
 * Link header on the instance's own address, whatever the request said its
 * host was (docs/CONFIGURATION.md).
 */
function ruleProblems (request: SentRequest, operation: string | undefined, response: ReceivedResponse, options: RuleOptions): string[] {
  const problems: string[] = []
  const where = `${request.method} ${request.url.slice(0, 120)} → ${response.status}`
  const headers = new Map([...response.headers].map(([name, value]) => [name.toLowerCase(), value]))
  if (response.status >= 500) problems.push(`${where}: a 5xx: ${response.body.slice(0, 300)}`)
  if (response.status >= 400 && request.method !== 'HEAD') {
    const contentType = headers.get('content-type') ?? ''
    if (!/^application\/json(;|$)/.test(contentType)) problems.push(`${where}: an error with Content-Type ${contentType}`)
    let body: unknown
    try {
      body = JSON.parse(response.body)
    } catch {
      body = undefined
    }
    const fields = typeof body === 'object' && body !== null ? body as Record<string, unknown> : {}
    if (typeof fields.code !== 'string' || typeof fields.message !== 'string' || fields.status !== response.status) {
      problems.push(`${where}: not an Error body with status ${response.status}: ${response.body.slice(0, 300)}`)
    }
  }
  if (isApiPath(request.url)) {
    for (const name of RATE_LIMIT_HEADERS) {
      if (!headers.has(name)) problems.push(`${where}: no ${name}`)
    }
  }
  for (const [, url] of (headers.get('link') ?? '').matchAll(/<([^>]*)>/g)) {
    if (url === undefined || !url.startsWith(`${options.baseUrl}/`)) problems.push(`${where}: a Link to ${url ?? ''}, not on ${options.baseUrl}`)
  }
  // An id the router cannot decode, or longer than it routes, is answered
  // before any route is chosen (app.ts, frameworkErrors): no operation's headers.
  if (operation === 'getPet' && routable(request.url, options.maxParamLength)) {
    for (const name of ['deprecation', 'sunset', 'link']) {
      if (!headers.has(name)) problems.push(`${where}: GET /pets/{petId} without ${name}`)
    }
  }
  return problems
}

function routable (url: string, maxParamLength: number): boolean {
  const segment = (url.split(/[?#]/)[0] ?? '').split('/').at(-1) ?? ''
  try {
    decodeURIComponent(segment)
  } catch {
    return false
  }
  return segment.length <= maxParamLength
}

const PET_STATUSES: readonly string[] = ['available', 'pending', 'sold']

/** Reads a JSON text with integers as exact `bigint`s; undefined when it is not JSON. */
function exactJson (text: string): unknown {
  try {
    return parse(text, undefined, (literal) => exactInteger(literal) ?? Number(literal))
  } catch {
    return undefined
  }
}

function record (value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
}

/**
 * What the service did, against what was asked (docs/API.md: Input
 * is strict, Paging): an added animal is the one sent,
 * exactly (`1e3` answered as 1000, a name unchanged); GET /pets/{petId}
 * answers that id; a page is in id order, within its limit, and only of the
 * status asked for.
 */
function outcomeProblems (request: SentRequest, operation: string | undefined, response: ReceivedResponse, headers: Map<string, string>): string[] {
  const where = `${request.method} ${request.url.slice(0, 120)} → ${response.status}`
  const problems: string[] = []
  const body = exactJson(response.body)
  if (operation === 'createPet' && response.status === 201 && headers.get('idempotent-replayed') === undefined && request.payload !== undefined) {
    const sent = record(exactJson(typeof request.payload === 'string' ? request.payload : new TextDecoder().decode(request.payload)))
    const pet = record(body)
    if (pet.name !== sent.name || pet.categoryId !== sent.categoryId || pet.status !== (sent.status ?? 'available')) {
      problems.push(`${where}: added ${response.body.slice(0, 300)} for ${String(request.payload).slice(0, 300)}`)
    }
  }
  if (operation === 'getPet' && response.status === 200 && request.method === 'GET') {
    const asked = exactInteger(decodeURIComponent((request.url.split(/[?#]/)[0] ?? '').split('/').at(-1) ?? ''))
    if (record(body).id !== asked) problems.push(`${where}: answered ${response.body.slice(0, 200)}`)
  }
  if (operation === 'listPets' && response.status === 200 && request.method === 'GET') {
    const query = new URLSearchParams(request.url.split('#')[0]?.split('?')[1] ?? '')
    const limit = Number(query.get('limit') ?? 20)
    const status = query.get('status')
    const pets = Array.isArray(body) ? body.map(record) : []
    const ids = pets.map((pet) => pet.id as bigint)
    if (pets.length > limit) problems.push(`${where}: ${pets.length} animals for limit ${limit}`)
    if (ids.some((id, i) => i > 0 && id <= (ids[i - 1] as bigint))) problems.push(`${where}: not in id order`)
    if (status !== null && PET_STATUSES.includes(status) && pets.some((pet) => pet.status !== status)) problems.push(`${where}: an animal of another status`)
  }
  return problems
}

interface Verdict {
  operation: string | undefined
  /** Problems that fail the run. */
  problems: string[]
}

/** The document's and the rules' verdict on one response. */
export function judge (checker: OpenApiChecker, request: SentRequest, response: ReceivedResponse, options: RuleOptions): Verdict {
  const { operation, problems: documentProblems } = checker.check(request, response)
  const headers = new Map([...response.headers].map(([name, value]) => [name.toLowerCase(), value]))
  const problems = [...documentProblems, ...ruleProblems(request, operation, response, options), ...outcomeProblems(request, operation, response, headers)]
  return { operation, problems }
}
