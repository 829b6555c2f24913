// The client: each operation of the service as a typed method, built on
// openapi-fetch (requests typed from the OpenAPI document) and the
// transport (retries, waits, bans, rate-limit state, deprecation).
import createClient, { type Client } from 'openapi-fetch'
import type { components, paths } from './generated/openapi.js'
import { parseJson, stringifyJson } from './json.js'
import type { RateLimit } from './pacer.js'
import { Transport, linkTarget, type DeprecationNotice } from './transport.js'

type Schemas = components['schemas']

/** An animal, as the service returns it; `id` and `categoryId` are exact `bigint`s. */
export type Pet = Schemas['Pet']
export type PetStatus = Schemas['PetStatus']

/** Where the key stands: its quota in each window (`reset` in Unix seconds) and any ban (`bannedUntil`, Unix seconds, or null). */
export type RateLimitStatus = Schemas['RateLimitStatus']

/** An animal to add; `categoryId` may be a `number` (a safe integer) or a `bigint`. */
export type NewPet = Omit<Schemas['NewPet'], 'categoryId'> & { categoryId: number | bigint }

export interface ListPetsQuery {
  /** Only animals with this status. */
  status?: PetStatus
  /** Animals per page: 1 to 100, 20 when omitted. */
  limit?: number
  /** Where the page starts: a page's `nextCursor`. */
  cursor?: string
}

export interface PetPage {
  pets: Pet[]
  /** Present when more animals follow: pass it as `cursor` for the next page. */
  nextCursor?: string
}

export interface PetstoreClientOptions {
  /** The service's address, ending in `/v1`: `https://api.petstore.example/v1`. */
  baseUrl: string
  /** An API key, sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string
  /** The `fetch` to send with; the global one when omitted (Node.js 20 and later, browsers). */
  fetch?: (request: Request) => Promise<Response>
  /** Retries of one call, after a 429, a 503, a 409 `idempotency_key_in_use` or a network error; 3 when omitted. */
  maxRetries?: number
  /** The longest one call may take, its retries and waits included, in milliseconds; 30 000 when omitted. */
  timeoutMs?: number
  /** Spaces requests so that this client's own traffic never meets a 429. */
  pace?: boolean
  /** Called once, for the first response that says its operation is deprecated; by default a warning is written to the console. */
  onDeprecation?: (notice: DeprecationNotice) => void
}

const DEFAULT_MAX_RETRIES = 3
const DEFAULT_TIMEOUT_MS = 30_000

export class PetstoreClient {
  readonly #api: Client<paths>
  readonly #transport: Transport
  readonly #baseUrl: string

  constructor (options: PetstoreClientOptions) {
    const { baseUrl, apiKey, fetch, maxRetries = DEFAULT_MAX_RETRIES, timeoutMs = DEFAULT_TIMEOUT_MS, pace = false, onDeprecation = warn } = options
    if (!/\/v1\/?$/.test(baseUrl)) throw new TypeError(`baseUrl must end in /v1: ${baseUrl}`)
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new TypeError(`maxRetries must be an integer of 0 or more: ${maxRetries}`)
    if (!(timeoutMs > 0)) throw new TypeError(`timeoutMs must be more than 0: ${timeoutMs}`)
    this.#baseUrl = baseUrl
    this.#transport = new Transport({
      // The global fetch is looked up at each call, and called as a function: browsers refuse it called on another object.
      fetch: fetch ?? (async (request) => await globalThis.fetch(request)),
      maxRetries,
      timeoutMs,
      pace,
      onDeprecation
    })
    this.#api = createClient<paths>({
      baseUrl,
      fetch: async (request) => await this.#transport.send(request),
      headers: { authorization: `Bearer ${apiKey}` },
      bodySerializer: stringifyJson
    })
  }

  /** What the last response said of the rate limit (`X-RateLimit-*`), undefined before the first. */
  get rateLimit (): RateLimit | undefined {
    return this.#transport.rateLimit
  }

  /**
   * Where the key stands, asked of the service: spends none of its quota,
   * and answers also when the quota is spent or the key is banned.
   */
  async fetchRateLimit (): Promise<RateLimitStatus> {
    const { data } = await this.#api.GET('/rate_limit', { parseAs: 'text' })
    return parseJson(data ?? '') as RateLimitStatus
  }

  /** One page of animals, ordered by id. */
  async listPets (query: ListPetsQuery = {}): Promise<PetPage> {
    const { data, response } = await this.#api.GET('/pets', { params: { query }, parseAs: 'text' })
    const pets = parseJson(data ?? '[]') as Pet[]
    const next = linkTarget(response.headers.get('link'), 'next')
    // Only the cursor is taken from the link: the next page is asked of
    // this client's own baseUrl, so that the key is never sent elsewhere.
    const nextCursor = next === undefined ? undefined : new URL(next, this.#baseUrl).searchParams.get('cursor') ?? undefined
    return nextCursor === undefined ? { pets } : { pets, nextCursor }
  }

  /** Every animal (with this status), page after page, following `Link: rel="next"` to the end. */
  async * allPets (query: Omit<ListPetsQuery, 'cursor'> = {}): AsyncGenerator<Pet, void, undefined> {
    let cursor: string | undefined
    do {
      const page: PetPage = await this.listPets(cursor === undefined ? query : { ...query, cursor })
      yield * page.pets
      cursor = page.nextCursor
    } while (cursor !== undefined)
  }

  /**
   * Adds an animal. The call carries an `Idempotency-Key` of its own, the
   * same on each of its retries, so that the animal is added once however
   * often the request is sent.
   */
  async createPet (pet: NewPet): Promise<Pet> {
    const body = { ...pet, categoryId: int64(pet.categoryId, 'categoryId') }
    const { data } = await this.#api.POST('/pets', {
      params: { header: { 'idempotency-key': crypto.randomUUID() } },
      body,
      parseAs: 'text'
    })
    return parseJson(data ?? '') as Pet
  }

  /**
   * One animal by id.
   *
   * @deprecated The service removes this operation on 5 December 2030 (it
   * answers 410 from then on). Use {@link PetstoreClient.listPets} or
   * {@link PetstoreClient.allPets} with a `status` filter instead.
   */
  async getPet (id: bigint | number): Promise<Pet> {
    const { data } = await this.#api.GET('/pets/{petId}', { params: { path: { petId: int64(id, 'id') } }, parseAs: 'text' })
    return parseJson(data ?? '') as Pet
  }
}

/** An int64 given as a number must be one a double holds exactly; a bigint is exact already. */
function int64 (value: number | bigint, name: string): bigint {
  if (typeof value === 'bigint') return value
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be an integer; past 2^53 pass it as a bigint: ${value}`)
  return BigInt(value)
}

function warn ({ method, url, sunset, successor }: DeprecationNotice): void {
  const until = sunset === undefined ? '' : `; it stops working on ${sunset.toISOString().slice(0, 10)}`
  const instead = successor === undefined ? '' : `; use ${successor} instead`
  console.warn(`petstore-client: ${method} ${new URL(url).pathname} is deprecated${until}${instead}.`)
}
