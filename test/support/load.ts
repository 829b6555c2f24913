// A write load for fault tests: many clients adding animals at once, each
// remembering exactly what every 201 promised, and a reader that lists the
// whole store back, so that a test can say which acknowledged animals (if
// any) were lost across a crash, a database outage or a shutdown.
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { isLosslessNumber, parse } from 'lossless-json'
import type { PetStatus } from '../../src/domain.js'
import { INT64_MAX, bearer, newPetJson } from './fixtures.js'
import {
  createKey, idsIn, linkTarget, parseErrorBody, startServer, withTimeout, type CreatedKey, type ServerProcess
} from './process.js'

/** An animal as sent, or as stored: every integer as its exact digits. */
export interface PetText { name: string, categoryId: string, status: PetStatus }

const STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold']
const REQUEST_TIMEOUT_MS = 10_000
/** After a 503 a client waits this long before its next try, as the service's Retry-After asks it to (scaled down). */
const BACKOFF_MS = 50

interface WriteLoadOptions {
  /** http://127.0.0.1:PORT, without /v1. */
  origin: string
  token: string
  /** How many clients send at once, each one request at a time. */
  clients: number
  /** Makes names and categoryIds unique across the loads of one test. */
  label: string
}

/**
 * `clients` loops, each POSTing one animal after another until stop() or
 * until its connection fails (the process died or closed its port). A 201
 * is remembered as acknowledged; a 503 `service_unavailable` (the database
 * is away) is counted and retried after a pause; anything else is unexpected.
 */
class WriteLoad {
  /** id → the animal its 201 promised. */
  readonly acknowledged = new Map<string, PetText>()
  /** Answers other than 201 and a 503 Error body, as `status body`. */
  readonly unexpected: string[] = []
  /** Ids a 201 gave that an earlier 201 had already given. */
  readonly reusedIds: string[] = []
  /** The X-Request-Id of every request that got an HTTP answer, whatever its status. */
  readonly answeredRequestIds = new Set<string>()
  /** Requests that got no answer, by the error's code (ECONNREFUSED: never reached the server). */
  readonly networkErrors = new Map<string, number>()
  #unavailable = 0
  #inFlight = 0
  #slowestMs = 0
  #stopped = false
  #running: number
  readonly #writers: Array<Promise<void>>
  readonly #listeners = new Set<() => void>()

  /** `acknowledged`: carried over from earlier loads, so that a reused id is caught across restarts. */
  constructor (readonly options: WriteLoadOptions, acknowledged?: Map<string, PetText>) {
    if (acknowledged !== undefined) this.acknowledged = acknowledged
    this.#running = options.clients
    this.#writers = Array.from({ length: options.clients }, async (_, client) => await this.#writer(client))
  }

  /** What every X-Request-Id of this load starts with. */
  get requestIdPrefix (): string { return `${this.options.label.replaceAll(/[^\x21-\x7e]/g, '-')}/` }

  get unavailable (): number { return this.#unavailable }
  /** Requests that got no answer at all. */
  get unanswered (): number { return [...this.networkErrors.values()].reduce((a, b) => a + b, 0) }
  get inFlight (): number { return this.#inFlight }
  get slowestMs (): number { return this.#slowestMs }

  /** Waits until `predicate` holds (checked after every answer), for at most `ms`. */
  async until (predicate: (load: WriteLoad) => boolean, ms: number, what: string): Promise<void> {
    let listener: (() => void) | undefined
    const met = new Promise<void>((resolve, reject) => {
      listener = () => {
        if (predicate(this)) resolve()
        else if (this.#running === 0) reject(new Error(`every client stopped before ${what}`))
      }
      this.#listeners.add(listener)
      listener()
    })
    try {
      await withTimeout(met, ms, what)
    } finally {
      if (listener !== undefined) this.#listeners.delete(listener)
    }
  }

  /** No client starts another request; resolves once every one has had its answer or error. */
  async stop (ms = REQUEST_TIMEOUT_MS + 5_000): Promise<void> {
    this.#stopped = true
    await withTimeout(Promise.all(this.#writers), ms, 'the write load to stop')
  }

  /** Resolves once every client has stopped by itself (its connection failed), for at most `ms`. */
  async ended (ms: number): Promise<void> {
    await withTimeout(Promise.all(this.#writers), ms, 'every client of the write load to see the server gone')
  }

  #notify (): void {
    for (const listener of this.#listeners) listener()
  }

  async #writer (client: number): Promise<void> {
    try {
      await this.#send(client)
    } finally {
      this.#running--
      this.#notify()
    }
  }

  async #send (client: number): Promise<void> {
    const { origin, token, label } = this.options
    const headers = { ...bearer(token), 'content-type': 'application/json' }
    for (let i = 0; !this.#stopped; i++) {
      const pet: PetText = {
        name: `${label} ${client}-${i}`,
        categoryId: (INT64_MAX - BigInt(client) * 1_000_000n - BigInt(i)).toString(),
        status: STATUSES[i % STATUSES.length] as PetStatus
      }
      // Sent as X-Request-Id, which the service writes in its log lines.
      const requestId = `${this.requestIdPrefix}${client}/${i}`
      const started = Date.now()
      this.#inFlight++
      let status: number
      let text: string
      try {
        const response = await fetch(`${origin}/v1/pets`, {
          method: 'POST',
          headers: { ...headers, 'x-request-id': requestId },
          body: newPetJson({ name: pet.name, categoryId: BigInt(pet.categoryId), status: pet.status }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
        })
        status = response.status
        text = await response.text()
      } catch (error) {
        // The connection died (the process was killed, or closed its port): never acknowledged.
        const code = errorCode(error)
        this.networkErrors.set(code, (this.networkErrors.get(code) ?? 0) + 1)
        this.#inFlight--
        this.#notify()
        return
      }
      this.#inFlight--
      this.answeredRequestIds.add(requestId)
      this.#slowestMs = Math.max(this.#slowestMs, Date.now() - started)
      this.#record(pet, status, text)
      this.#notify()
      if (status === 503) await delay(BACKOFF_MS)
    }
  }

  #record (pet: PetText, status: number, text: string): void {
    if (status === 201) {
      const stored = parsePet(text)
      if (stored === undefined || stored.name !== pet.name || stored.categoryId !== pet.categoryId || stored.status !== pet.status) {
        this.unexpected.push(`201 that is not the animal sent (${JSON.stringify(pet)}): ${text}`)
        return
      }
      if (this.acknowledged.has(stored.id)) this.reusedIds.push(stored.id)
      this.acknowledged.set(stored.id, pet)
      return
    }
    if (status === 503 && isUnavailableBody(text)) {
      this.#unavailable++
      return
    }
    this.unexpected.push(`${status} ${text}`)
  }
}

/** fetch's TypeError wraps the socket's error, whose code says how the connection failed. */
function errorCode (error: unknown): string {
  const cause: unknown = error instanceof Error ? error.cause : undefined
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown'
}

function isUnavailableBody (text: string): boolean {
  try {
    const error = parseErrorBody(text)
    return error.code === 'service_unavailable' && error.status === 503
  } catch {
    return false
  }
}

interface StoredPet extends PetText { id: string }

function toStoredPet (item: unknown): StoredPet | undefined {
  if (typeof item !== 'object' || item === null) return undefined
  const { id, name, categoryId, status } = item as Record<string, unknown>
  if (!isLosslessNumber(id) || typeof name !== 'string' || !isLosslessNumber(categoryId) || typeof status !== 'string') return undefined
  return { id: id.toString(), name, categoryId: categoryId.toString(), status: status as PetStatus }
}

/** One Pet, with every integer kept as its exact digits. */
function parsePet (text: string): StoredPet | undefined {
  try {
    return toStoredPet(parse(text))
  } catch {
    return undefined
  }
}

/** Every animal the service lists, page after page, as id → animal; fails if ids are not increasing. */
async function listEverything (origin: string, token: string): Promise<Map<string, PetText>> {
  const stored = new Map<string, PetText>()
  let previous = 0n
  let next: string | undefined = `${origin}/v1/pets?limit=100`
  while (next !== undefined) {
    const response: Response = await fetch(next, { headers: bearer(token), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    const text = await response.text()
    assert.equal(response.status, 200, text)
    const page: unknown = parse(text)
    assert.ok(Array.isArray(page), `not an array: ${text.slice(0, 200)}`)
    for (const item of page) {
      const pet = toStoredPet(item)
      assert.ok(pet !== undefined, `not a Pet: ${JSON.stringify(item)}`)
      assert.ok(BigInt(pet.id) > previous, `the listing is not in increasing id order at ${pet.id}`)
      previous = BigInt(pet.id)
      stored.set(pet.id, { name: pet.name, categoryId: pet.categoryId, status: pet.status })
    }
    next = linkTarget(response.headers.get('link'), 'next')
  }
  return stored
}

/** Acknowledged animals that are missing from `stored`, or stored otherwise than sent, as readable lines. */
function lostOrChanged (acknowledged: ReadonlyMap<string, PetText>, stored: ReadonlyMap<string, PetText>): string[] {
  const problems: string[] = []
  for (const [id, sent] of acknowledged) {
    const found = stored.get(id)
    if (found === undefined) problems.push(`${id} lost (${sent.name})`)
    else if (found.name !== sent.name || found.categoryId !== sent.categoryId || found.status !== sent.status) {
      problems.push(`${id} changed: sent ${JSON.stringify(sent)}, stored ${JSON.stringify(found)}`)
    }
  }
  return problems
}

// ---------------------------------------------------------------------------
// The fault loops: a fault in a load in full swing, a restart, a look at what survived

/** A key whose limits no write load here comes near: these tests are about durability, not about rate limiting. */
export async function createUnlimitedKey (env: Record<string, string>, name: string): Promise<CreatedKey> {
  // Its requests in flight too: a load of more than 100 at once would meet the enterprise cap.
  return await createKey(env, ['--plan', 'enterprise', '--name', name, '--per-minute', '100000000', '--per-day', '1000000000', '--concurrency', '10000'])
}

/**
 * Starts the service and lists everything it holds: `lost` is what the last
 * fault took of the acknowledged animals. The server goes into `servers`,
 * which the suite disposes of whatever happens.
 */
export async function restartAndList (
  env: Record<string, string>, token: string, acknowledged: ReadonlyMap<string, PetText>, servers: ServerProcess[]
): Promise<{ server: ServerProcess, lost: string[] }> {
  const server = await startServer(env)
  servers.push(server)
  return { server, lost: lostOrChanged(acknowledged, await listEverything(server.origin, token)) }
}

interface FullSwingOptions {
  token: string
  clients: number
  cycle: number
  /** Writes of this cycle acknowledged before it returns. */
  count: number
  /** Then a random moment within this long, so that a fault lands at a different point of a commit each time. */
  spreadMs: number
}

/** A write load on `server`, once it is in full swing; `before` is how many animals were acknowledged when it began. */
export async function loadInFullSwing (
  server: ServerProcess, { token, clients, cycle, count, spreadMs }: FullSwingOptions, acknowledged: Map<string, PetText>
): Promise<{ load: WriteLoad, before: number }> {
  const before = acknowledged.size
  const load = new WriteLoad({ origin: server.origin, token, clients, label: `cycle ${cycle}` }, acknowledged)
  await load.until((l) => l.acknowledged.size >= before + count, 30_000, `${count} acknowledged writes in cycle ${cycle}`)
  await delay(Math.random() * spreadMs)
  return { load, before }
}

/** One animal added outside any load, as its answer's status and text. */
export async function addPet (origin: string, token: string, name: string): Promise<{ status: number, text: string }> {
  const response = await fetch(`${origin}/v1/pets`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: newPetJson({ name }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  })
  return { status: response.status, text: await response.text() }
}

/** The animal added after the faults got a 201 and an id above every acknowledged one: no id was handed out twice. */
export function assertAddedAfter (added: { status: number, text: string }, acknowledged: ReadonlyMap<string, PetText>): void {
  assert.equal(added.status, 201, added.text)
  const largest = [...acknowledged.keys()].reduce((max, id) => (BigInt(id) > max ? BigInt(id) : max), 0n)
  assert.ok(BigInt(idsIn(added.text)[0] ?? '0') > largest, `id ${added.text} given after the crashes; the largest acknowledged was ${largest}`)
}

/** `min–max` of figures, for a diagnostic line. */
export function range (values: number[]): string {
  return `${Math.min(...values)}–${Math.max(...values)}`
}
