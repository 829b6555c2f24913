// A secret scanner made in the test, standing in for GitHub's: a P-256 key
// pair, its public key in a key list as GitHub publishes it, and reports
// signed as GitHub signs them (docs/KEYS.md: Leaked tokens).
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export interface Scanner {
  identifier: string
  publicPem: string
  privateKey: KeyObject
  /** The headers that sign these bytes. */
  sign: (body: string | Buffer) => Record<string, string>
}

export function makeScanner (identifier = randomUUID().replace(/-/g, '')): Scanner {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return {
    identifier,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKey,
    sign: (body) => ({
      'github-public-key-identifier': identifier,
      'github-public-key-signature': sign('sha256', Buffer.from(body), { key: privateKey, dsaEncoding: 'der' }).toString('base64')
    })
  }
}

/** The folders keyListPath made, removed when this test process ends (its servers have been stopped by then). */
const folders: string[] = []

/** A path for a key list in a folder of its own, removed when the test process ends; nothing is written there yet. */
export function keyListPath (): string {
  if (folders.length === 0) process.once('exit', () => { for (const folder of folders) rmSync(folder, { recursive: true, force: true }) })
  const folder = mkdtempSync(join(tmpdir(), 'petstore-scanner-'))
  folders.push(folder)
  return join(folder, 'keys.json')
}

/** The key list of these scanners, in GitHub's format. */
export function keyList (...scanners: Scanner[]): string {
  return JSON.stringify({ public_keys: scanners.map((s, i) => ({ key_identifier: s.identifier, key: s.publicPem, is_current: i === 0 })) })
}

/** The key list written to a file of its own; its file: URL. */
export function keyListFile (...scanners: Scanner[]): string {
  const path = keyListPath()
  writeFileSync(path, keyList(...scanners))
  return pathToFileURL(path).href
}

/** A report of these tokens, as GitHub writes one. */
export function report (tokens: string[], url = 'https://github.com/octocat/Hello-World/blob/12345600b9cbe38a219f39a9941c9319b600c002/foo/bar.txt'): string {
  return JSON.stringify(tokens.map((token) => ({ token, type: 'petstore_api_token', url, source: 'content' })))
}
