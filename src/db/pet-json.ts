// Animals as the database writes them, for both backends: a list sends the
// database's bytes rather than rows serialized again (docs/PERFORMANCE.md:
// "Where the scaled-out list's CPU goes"). A page is read as the JSON array
// of one animal more than the page, which says whether another page follows
// and is cut off as a string.
import { LRUCache } from 'lru-cache'
import type { PetPageJson, PetPageQuery } from './storage.js'

/** The bytes of animals kept (some 50,000 of them): the least recently read go first. */
const KEPT_PET_BYTES = 4 * 1024 * 1024
/** The bytes of pages kept (about 3,000 pages of 20): the least recently read go first. */
const KEPT_PAGE_BYTES = 4 * 1024 * 1024

/** Where each animal starts in a page's JSON: a string value cannot hold it, since its quotes are escaped there. */
const ANIMAL_START = '{"id":'

/** The page of `size` animals in `json`, which holds `count` of them, up to `size` + 1. */
export function cutPage (json: string, count: number, size: number): PetPageJson {
  if (count <= size) return { json: Buffer.from(json), nextAfterId: undefined }
  const page = json.slice(0, json.lastIndexOf(',' + ANIMAL_START)) + ']'
  const last = page.lastIndexOf(ANIMAL_START) + ANIMAL_START.length
  return { json: Buffer.from(page), nextAfterId: BigInt(page.slice(last, page.indexOf(',', last))) }
}

/**
 * Animals found, as sent, by id. Once committed an animal never changes (the
 * API neither updates nor deletes one), so one kept is right on every instance,
 * on either backend. One not found is not kept: it may be added a moment later.
 */
export class KeptAnimals {
  readonly #kept = new LRUCache<bigint, Buffer>({ maxSize: KEPT_PET_BYTES, sizeCalculation: (json) => json.length })

  /** The animal's bytes, kept or else read as JSON by `read` (undefined: not there). */
  async get (id: bigint, read: () => string | undefined | Promise<string | undefined>): Promise<Buffer | undefined> {
    const kept = this.#kept.get(id)
    if (kept !== undefined) return kept
    const json = await read()
    if (json === undefined) return undefined
    const bytes = Buffer.from(json)
    this.#kept.set(id, bytes)
    return bytes
  }
}

/**
 * Whether a page can never change, on either backend: it is full (another
 * animal follows it) and holds every id from the cursor on, `size` of them in
 * a row. Ids are never reused and animals never deleted, so no animal can
 * join the page later, whichever order ids commit in (docs/INTERNALS.md, "Kept pages").
 */
export function isFinalPage ({ afterId, size }: PetPageQuery, page: PetPageJson): boolean {
  return page.nextAfterId === afterId + BigInt(size)
}

/**
 * Pages that can never change, as sent. `final` says which: on SQLite every
 * full page, on PostgreSQL those isFinalPage proves.
 */
export class KeptPages {
  readonly #kept = new LRUCache<string, PetPageJson>({ maxSize: KEPT_PAGE_BYTES, sizeCalculation: (page) => page.json.length })
  readonly #final: (query: PetPageQuery, page: PetPageJson) => boolean

  constructor (final: (query: PetPageQuery, page: PetPageJson) => boolean) {
    this.#final = final
  }

  /** The page, kept or else read by `read`, and kept when final. */
  async get (query: PetPageQuery, read: () => PetPageJson | Promise<PetPageJson>): Promise<PetPageJson> {
    const key = `${query.status ?? ''} ${query.afterId} ${query.size}`
    const kept = this.#kept.get(key)
    if (kept !== undefined) return kept
    const page = await read()
    if (this.#final(query, page)) this.#kept.set(key, page)
    return page
  }
}
