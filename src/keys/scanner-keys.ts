// The public keys that sign secret-scanning reports, in the format of
// GitHub's list (`{"public_keys": [{"key_identifier", "key", "is_current"}]}`),
// read from SECRET_SCANNING_KEYS_URL when first needed and again when a
// report names a key the list lacked, at most once a minute, so that
// reports naming made-up keys cannot make the service fetch without end
// (docs/KEYS.md: Leaked tokens).
// https://docs.github.com/en/code-security/secret-scanning/secret-scanning-partnership-program/secret-scanning-partner-program
import { createPublicKey, verify, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

/** A report naming a key the list lacks reads the list again at most this often. */
export const REFETCH_MS = 60_000
/** A list that does not come within this long is given up, until the next reason to read it. */
const FETCH_TIMEOUT_MS = 5_000
/** GitHub's list is a few kilobytes; anything much larger is not it. */
const MAX_LIST_BYTES = 1024 * 1024
/** A DER ECDSA P-256 signature is at most 72 bytes, 96 characters of base64; an identifier a SHA-256 in hex. */
const MAX_SIGNATURE_CHARS = 200
const MAX_IDENTIFIER_CHARS = 200

/**
 * The list has never been read, so no signature can be checked: the report
 * may well be genuine. Refusing it as unsigned would make GitHub drop it;
 * asked to come again, it retries. `retryAfterMs`: until the list may be
 * read again.
 */
export class ScannerKeysUnavailableError extends Error {
  constructor (readonly retryAfterMs: number) {
    super('the secret scanner\'s key list has not been read yet')
  }
}

export interface ScannerKeys {
  /**
   * Whether `signature` (base64 DER ECDSA, as GitHub sends it) is the
   * signature over `body` by the key named `identifier`; false when either
   * header is missing or malformed, or no key of the list has that name.
   * Throws ScannerKeysUnavailableError for a signed report while the list
   * has never been read.
   */
  verify: (identifier: string | undefined, signature: string | undefined, body: Buffer) => Promise<boolean>
}

export interface ScannerKeysOptions {
  /** https:, http: (loopback only, config.ts checks) or file:. */
  url: string
  /** Monotonic milliseconds; tests move it. */
  monotonic?: () => number
  /** Told of each read of the list that failed: the keys already read are kept. */
  onError?: (error: unknown) => void
}

export function createScannerKeys ({ url, monotonic: clock = () => performance.now(), onError = () => {} }: ScannerKeysOptions): ScannerKeys {
  let keys = new Map<string, KeyObject>()
  let lastRead = -Infinity
  let everRead = false
  let reading: Promise<void> | undefined

  /** Reads the list now; callers that come meanwhile share the read. */
  const read = (): Promise<void> => {
    reading ??= (async () => {
      lastRead = clock()
      try {
        keys = parseKeyList(await fetchList(url))
        everRead = true
      } catch (error) {
        onError(error)
      } finally {
        reading = undefined
      }
    })()
    return reading
  }

  return {
    async verify (identifier, signature, body) {
      if (identifier === undefined || signature === undefined) return false
      if (identifier.length > MAX_IDENTIFIER_CHARS || signature.length > MAX_SIGNATURE_CHARS) return false
      if (!keys.has(identifier)) {
        // A read under way may bring it: a report that comes meanwhile waits for that read, not for the next.
        if (reading !== undefined) await reading
        else if (clock() - lastRead >= REFETCH_MS) await read()
      }
      if (!everRead) throw new ScannerKeysUnavailableError(Math.max(0, lastRead + REFETCH_MS - clock()))
      const key = keys.get(identifier)
      if (key === undefined) return false
      try {
        return verify('sha256', body, { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'))
      } catch {
        // Bytes that are no DER signature at all.
        return false
      }
    }
  }
}

async function fetchList (url: string): Promise<string> {
  if (url.startsWith('file:')) return await readFile(fileURLToPath(url), 'utf8')
  const response = await fetch(url, {
    headers: { accept: 'application/json', 'user-agent': 'petstore' },
    redirect: 'error',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS)
  })
  if (!response.ok) throw new Error(`the secret scanner's key list answered ${response.status}`)
  const text = await response.text()
  if (text.length > MAX_LIST_BYTES) throw new Error('the secret scanner\'s key list is larger than 1 MiB')
  return text
}

/** The list's P-256 keys by identifier; throws when it is not such a list. Keys of other kinds are left out. */
function parseKeyList (text: string): Map<string, KeyObject> {
  const list = JSON.parse(text) as { public_keys?: unknown }
  if (!Array.isArray(list.public_keys)) throw new Error('the secret scanner\'s key list has no public_keys array')
  const keys = new Map<string, KeyObject>()
  for (const entry of list.public_keys as unknown[]) {
    const { key_identifier: identifier, key: pem } = (entry ?? {}) as { key_identifier?: unknown, key?: unknown }
    if (typeof identifier !== 'string' || typeof pem !== 'string') continue
    let key: KeyObject
    try {
      key = createPublicKey(pem)
    } catch {
      continue
    }
    if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') keys.set(identifier, key)
  }
  return keys
}
