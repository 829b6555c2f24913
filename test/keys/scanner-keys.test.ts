// The secret scanner's key list (keys/scanner-keys.ts): read when first
// needed, and again for a key it lacks at most once a minute.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { REFETCH_MS, ScannerKeysUnavailableError, createScannerKeys } from '../../src/keys/scanner-keys.js'
import { keyList, keyListFile, makeScanner } from '../support/scanner.js'

describe('the secret scanner\'s key list', () => {
  const github = makeScanner()
  const body = Buffer.from('[{"token":"pet_live_x","type":"petstore"}]')
  let server: Server
  let reads = 0
  let served = keyList(github)
  let url: string
  before(async () => {
    server = createServer((_request, response) => { reads++; response.setHeader('content-type', 'application/json').end(served) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`
  })
  after(async () => { await new Promise((resolve) => server.close(resolve)) })

  it('When reports name unknown keys, then the list is read again at most once a minute, and a key added meanwhile is found after that minute', async () => {
    reads = 0
    let now = 1000
    const keys = createScannerKeys({ url, monotonic: () => now })
    const { 'github-public-key-signature': signature } = github.sign(body)
    assert.equal(await keys.verify(github.identifier, signature, body), true)
    assert.equal(reads, 1)
    const rotated = makeScanner()
    served = keyList(github, rotated)
    const rotatedHeaders = rotated.sign(body)
    for (let i = 0; i < 100; i++) {
      assert.equal(await keys.verify(`made-up-${i}`, signature, body), false)
      now += 500
    }
    assert.equal(await keys.verify(rotated.identifier, rotatedHeaders['github-public-key-signature'], body), false)
    assert.equal(reads, 1, 'no read within the minute')
    now = 1000 + REFETCH_MS
    assert.equal(await keys.verify(rotated.identifier, rotatedHeaders['github-public-key-signature'], body), true)
    assert.equal(reads, 2)
    // Many at once share one read.
    now += REFETCH_MS
    await Promise.all(Array.from({ length: 20 }, async (_, i) => await keys.verify(`other-${i}`, signature, body)))
    assert.equal(reads, 3)
  })

  it('When a second report comes while the first read of the list is under way, then it waits for that read and is verified (regression: it was answered 503, the list not read yet)', async () => {
    // Arrange: the clock stands still, as it does between two requests in the same millisecond.
    reads = 0
    served = keyList(github)
    const keys = createScannerKeys({ url, monotonic: () => 1000 })
    const headers = github.sign(body)
    const verifying = async (identifier: string): Promise<boolean> => await keys.verify(identifier, headers['github-public-key-signature'], body)

    // Act
    const [first, second, unknown] = await Promise.all([verifying(github.identifier), verifying(github.identifier), verifying('made-up')])

    // Assert
    assert.deepEqual([first, second, unknown], [true, true, false])
    assert.equal(reads, 1, 'one read for all three')
  })

  it('When the list is a file, then it is read from there', async () => {
    const keys = createScannerKeys({ url: keyListFile(github) })
    const headers = github.sign(body)
    assert.equal(await keys.verify(headers['github-public-key-identifier'], headers['github-public-key-signature'], body), true)
    assert.equal(await keys.verify(headers['github-public-key-identifier'], headers['github-public-key-signature'], Buffer.from('[]')), false)
  })

  it('When the list was never read, then a signed report is put off until the next allowed read, an unsigned one refused, and the error told', async () => {
    const errors: unknown[] = []
    let now = 5000
    const keys = createScannerKeys({ url: 'file:///nonexistent/keys.json', monotonic: () => now, onError: (error) => { errors.push(error) } })
    const headers = github.sign(body)
    const verifying = async (): Promise<boolean> => await keys.verify(headers['github-public-key-identifier'], headers['github-public-key-signature'], body)

    await assert.rejects(verifying(), (error: unknown) => error instanceof ScannerKeysUnavailableError && error.retryAfterMs === REFETCH_MS)
    now += 20_000
    await assert.rejects(verifying(), (error: unknown) => error instanceof ScannerKeysUnavailableError && error.retryAfterMs === REFETCH_MS - 20_000)
    assert.equal(await keys.verify(undefined, headers['github-public-key-signature'], body), false)
    assert.equal(errors.length, 1, 'no read within the minute')
  })

  it('When the list was read once and then cannot be read, then the keys read are kept and an unknown key is refused, not put off', async () => {
    reads = 0
    let now = 0
    served = keyList(github)
    const keys = createScannerKeys({ url, monotonic: () => now })
    const headers = github.sign(body)
    assert.equal(await keys.verify(headers['github-public-key-identifier'], headers['github-public-key-signature'], body), true)
    served = 'not json'
    now += REFETCH_MS
    assert.equal(await keys.verify('made-up', headers['github-public-key-signature'], body), false)
    assert.equal(reads, 2)
    assert.equal(await keys.verify(headers['github-public-key-identifier'], headers['github-public-key-signature'], body), true)
  })
})
