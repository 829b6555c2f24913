// A page of animals as the database writes it: the JSON array of one animal
// more than the page, which says whether another page follows and is cut
// off as a string. Both backends write it, so that a list sends the
// database's bytes rather than rows serialized again (docs/PERFORMANCE.md:
// "The list on PostgreSQL, written by PostgreSQL").
import type { PetPageJson } from './storage.js'

/** Where each animal starts in a page's JSON: a string value cannot hold it, since its quotes are escaped there. */
const ANIMAL_START = '{"id":'

/** The page of `size` animals in `json`, which holds `count` of them, up to `size` + 1. */
export function cutPage (json: string, count: number, size: number): PetPageJson {
  if (count <= size) return { json: Buffer.from(json), nextAfterId: undefined }
  const page = json.slice(0, json.lastIndexOf(',' + ANIMAL_START)) + ']'
  const last = page.lastIndexOf(ANIMAL_START) + ANIMAL_START.length
  return { json: Buffer.from(page), nextAfterId: BigInt(page.slice(last, page.indexOf(',', last))) }
}
