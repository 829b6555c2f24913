// Leaked tokens (docs/KEYS.md: Leaked tokens): a token a secret scanner
// found in public, or one its holder gives up, revokes its key as an
// operator's revocation does, so every instance and worker refuses it
// within a second; where it was found is kept with the key.
import { createHash } from 'node:crypto'
import type { KeyLeakRecord, KeyStore, LeakStore } from '../db/storage.js'
import { UnknownTokenError, findKey, revokeLeakedKey } from './manage.js'

/** What a secret scanner is told of each token it reported, in GitHub's words. */
export type LeakLabel = 'true_positive' | 'false_positive'

/** The report of revocations by a token's holder: one per key, however often it is asked. */
export const HOLDER_REPORT = 'holder'

/** Where a report says it saw a token. */
export interface Sighting {
  token: string
  /** `reportId(…)` of the report's bytes, or HOLDER_REPORT. */
  report: string
  url: string | null
  source: string | null
}

/** A report's name: the same bytes are the same report, however often they are sent. */
export function reportId (body: Buffer): string {
  return `github:${createHash('sha256').update(body).digest('hex')}`
}

/**
 * What a reported token does. A token a key of ours was ever given is a
 * true positive; when it is the key's current token, or its previous one
 * while a roll's overlap runs, and the key is not revoked yet, the leak
 * is recorded and the whole key revoked. Any other token is a false
 * positive and changes nothing.
 */
export async function reportToken (storage: KeyStore & LeakStore, sighting: Sighting, now: number): Promise<LeakLabel> {
  let found
  try {
    found = await findKey(storage, sighting.token, now)
  } catch (error) {
    if (error instanceof UnknownTokenError) return 'false_positive'
    throw error
  }
  // A token rolled away from no longer works: nothing is left to revoke.
  if (!found.key.revoked && found.matchedToken !== 'former') {
    await recordLeak(storage, { keyId: found.key.id, report: sighting.report, url: sighting.url, source: sighting.source, foundAt: now }, now)
  }
  return 'true_positive'
}

/**
 * The one place a leak is recorded: the leak, then the revocation, which
 * writes `key.revoked` and `key.leaked` in its own transaction. A revocation
 * that failed after its leak was recorded is done, and announced, by the
 * report's next delivery, which finds the key still live.
 */
async function recordLeak (storage: KeyStore & LeakStore, leak: KeyLeakRecord, now: number): Promise<void> {
  await storage.addKeyLeak(leak)
  await revokeLeakedKey(storage, leak, now)
}
