// POST /v1/secret-scanning and POST /v1/credentials/revoke (docs/API.md:
// Leaked tokens), on SQLite with in-process limits and on PostgreSQL with
// Redis, with a key pair made here standing in for GitHub's.
import { afterEach, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { CONFIGURATIONS, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { keyList, keyListFile, keyListPath, makeScanner, report, type Scanner } from '../support/scanner.js'
import { findKey, revokeKey, rollKey } from '../../src/keys/manage.js'
import { generateToken } from '../../src/keys/tokens.js'

interface Label { token_raw: string, token_type: string, label: string }

/** The key's state, to compare before and after what must change nothing. */
async function snapshot (t: TestApp, token: string): Promise<unknown> {
  const { key } = await findKey(t.storage, token, t.clock.now())
  return { revokedAt: key.revokedAt, leaks: await t.storage.firstKeyLeaks([key.id]), leaked: await t.storage.countLeakedKeys() }
}

/** Revocations by holders run after their answer: waits, in real time, for the key to be revoked. */
async function revoked (t: TestApp, token: string, withinMs = 1000): Promise<boolean> {
  const until = Date.now() + withinMs
  while (Date.now() < until) {
    if ((await findKey(t.storage, token, t.clock.now())).key.revoked) return true
    await sleep(10)
  }
  return false
}

for (const configuration of CONFIGURATIONS) {
  describe(`POST /v1/secret-scanning (${configuration.name})`, () => {
    let t: TestApp
    let github: Scanner
    const post = async (body: string, headers: Record<string, string>, remoteAddress?: string) => await t.app.inject({
      method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json', ...headers }, payload: body, ...(remoteAddress === undefined ? {} : { remoteAddress })
    })
    before(() => { github = makeScanner() })
    beforeEach(async () => {
      t = await buildTestApp({ SECRET_SCANNING_KEYS_URL: keyListFile(github) }, { backend: configuration.backend, limiterBackend: configuration.limiterBackend })
    })
    afterEach(async () => { await t.close() })

    it('When a signed report names a live, a revoked and an unknown token, then they are labelled true, true and false positive, and the live key is refused within a second', async () => {
      const live = await t.newKey()
      const gone = await t.newKey()
      await revokeKey(t.storage, (await findKey(t.storage, gone, t.clock.now())).key.id, t.clock.now())
      const unknown = generateToken('production')
      assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(live) })).statusCode, 200)
      const body = report([live, gone, unknown])

      const response = await post(body, github.sign(body))

      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual((response.json() as Label[]).map((l) => [l.token_raw, l.token_type, l.label]), [
        [live, 'petstore_api_token', 'true_positive'], [gone, 'petstore_api_token', 'true_positive'], [unknown, 'petstore_api_token', 'false_positive']
      ])
      t.clock.advance(1000)
      const refused = await t.app.inject({ url: '/v1/pets', headers: bearer(live) })
      assert.equal(refused.statusCode, 401)
      assert.equal(errorOf(refused).code, 'invalid_api_key')
      const { key } = await findKey(t.storage, live, t.clock.now())
      const [leak] = await t.storage.firstKeyLeaks([key.id])
      assert.equal(leak?.url, 'https://github.com/octocat/Hello-World/blob/12345600b9cbe38a219f39a9941c9319b600c002/foo/bar.txt')
      assert.equal(leak?.source, 'content')
      assert.match(leak?.report ?? '', /^github:[0-9a-f]{64}$/)
      assert.equal(leak?.foundAt, key.revokedAt === null ? undefined : Date.parse(key.revokedAt))
      // The key revoked before the report has no leak of its own: the report changed nothing of it.
      assert.equal(await t.storage.countLeakedKeys(), 1)
    })

    it('When the same report comes twice, then the second changes nothing and is answered the same', async () => {
      const live = await t.newKey()
      const body = report([live])
      const first = await post(body, github.sign(body))
      const before = await snapshot(t, live)
      t.clock.advance(5000)
      const second = await post(body, github.sign(body))
      assert.equal(second.statusCode, 200)
      assert.deepEqual(second.json(), first.json())
      assert.deepEqual(await snapshot(t, live), before)
    })

    it('When a token is the previous one of a key being rolled, then the whole key is revoked; a token rolled away from is a true positive that changes nothing', async () => {
      const first = await t.newKey()
      const { key } = await findKey(t.storage, first, t.clock.now())
      const second = (await rollKey(t.storage, key.id, 3600, t.clock.now())).token
      await rollKey(t.storage, key.id, 3600, t.clock.now())
      const formerReport = report([first])
      assert.equal((await post(formerReport, github.sign(formerReport))).json()[0].label, 'true_positive')
      assert.equal((await findKey(t.storage, second, t.clock.now())).key.revoked, false)
      const previousReport = report([second])
      assert.equal((await post(previousReport, github.sign(previousReport))).json()[0].label, 'true_positive')
      assert.equal((await findKey(t.storage, second, t.clock.now())).key.revoked, true)
    })

    it('When a report is signed by another key, changed after signing, or not signed, then it is refused with 401 and nothing changes', async () => {
      const live = await t.newKey()
      const body = report([live])
      const before = await snapshot(t, live)
      const impostor = makeScanner(github.identifier)
      const changed = report([live], 'https://example.com/elsewhere')
      const { 'github-public-key-signature': signature } = github.sign(body)
      for (const [what, response] of [
        ['another key', await post(body, impostor.sign(body))],
        ['a changed body', await post(changed, github.sign(body))],
        ['no signature', await post(body, {})],
        ['no identifier', await post(body, { 'github-public-key-signature': signature ?? '' })],
        ['an unknown identifier', await post(body, { ...github.sign(body), 'github-public-key-identifier': 'nobody' })],
        ['a signature that is no DER', await post(body, { ...github.sign(body), 'github-public-key-signature': 'bm90IGEgc2lnbmF0dXJl' })]
      ] as const) {
        assert.equal(response.statusCode, 401, what)
        assert.equal(errorOf(response).code, 'invalid_signature', what)
      }
      assert.deepEqual(await snapshot(t, live), before)
      assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(live) })).statusCode, 200)
    })

    it('When the key list could never be read, then a signed report gets 503 with Retry-After until the next read and changes nothing, an unsigned one 401; once the list is there, the report is taken', async () => {
      // Arrange: the list's file does not exist yet, as a URL GitHub cannot be reached at.
      const path = keyListPath()
      const cut = await buildTestApp({ SECRET_SCANNING_KEYS_URL: pathToFileURL(path).href }, { backend: configuration.backend, limiterBackend: configuration.limiterBackend })
      try {
        const live = await cut.newKey()
        const body = report([live])
        const send = async (headers: Record<string, string>) => await cut.app.inject({ method: 'POST', url: '/v1/secret-scanning', headers: { 'content-type': 'application/json', ...headers }, payload: body })

        // Act and assert
        const first = await send(github.sign(body))
        assert.equal(first.statusCode, 503, first.body)
        assert.equal(errorOf(first).code, 'service_unavailable')
        assert.equal(first.headers['retry-after'], '60')
        cut.clock.advance(45_000)
        const meanwhile = await send(github.sign(body))
        assert.equal(meanwhile.statusCode, 503)
        assert.equal(meanwhile.headers['retry-after'], '15')
        const unsigned = await send({})
        assert.equal(unsigned.statusCode, 401)
        assert.equal(errorOf(unsigned).code, 'invalid_signature')
        assert.equal((await cut.app.inject({ url: '/v1/pets', headers: bearer(live) })).statusCode, 200)
        assert.equal(await cut.storage.countLeakedKeys(), 0)
        writeFileSync(path, keyList(github))
        assert.equal((await send(github.sign(body))).statusCode, 503, 'the list is not read again within the minute')
        cut.clock.advance(15_000)
        const taken = await send(github.sign(body))
        assert.equal(taken.statusCode, 200, taken.body)
        assert.equal((taken.json() as Label[])[0]?.label, 'true_positive')
        assert.equal((await findKey(cut.storage, live, cut.clock.now())).key.revoked, true)
      } finally {
        await cut.close()
      }
    })

    it('When a report is malformed, huge or over 1 MiB, then it gets a 4xx with the Error body, never a 5xx', async () => {
      const cases: Array<[string, string, number, string]> = [
        ['bad JSON', '[{"token":', 400, 'invalid_json'],
        ['an object', '{"token":"x","type":"y"}', 400, 'invalid_request'],
        ['an empty array', '[]', 400, 'invalid_request'],
        ['a match without type', '[{"token":"x"}]', 400, 'invalid_request'],
        ['a token that is a number', '[{"token":1,"type":"y"}]', 400, 'invalid_request'],
        ['1,001 matches', report(Array.from({ length: 1001 }, () => 'pet_live_x')), 400, 'invalid_request'],
        ['a null', 'null', 400, 'invalid_request']
      ]
      for (const [what, body, status, code] of cases) {
        const response = await post(body, github.sign(body))
        assert.equal(response.statusCode, status, `${what}: ${response.body}`)
        assert.equal(errorOf(response).code, code, what)
      }
      const big = report([`pet_live_${'a'.repeat(1024 * 1024)}`])
      const tooLarge = await post(big, github.sign(big))
      assert.equal(tooLarge.statusCode, 413)
      assert.equal(errorOf(tooLarge).code, 'payload_too_large')
      assert.match(errorOf(tooLarge).message, /1 MiB/)
      // Larger than the API's 16 KiB, within the route's 1 MiB: taken.
      const many = report(Array.from({ length: 900 }, () => generateToken('production')))
      assert.ok(many.length > 16 * 1024)
      const taken = await post(many, github.sign(many))
      assert.equal(taken.statusCode, 200, taken.body)
      assert.ok((taken.json() as Label[]).every((l) => l.label === 'false_positive'))
    })

    it('When one address sends more than 120 reports in a minute, then it gets 429, and another address does not', async () => {
      const body = report([generateToken('production')])
      const headers = github.sign(body)
      for (let i = 0; i < 120; i++) assert.equal((await post(body, headers, '198.51.100.7')).statusCode, 200, `report ${i + 1}`)
      const refused = await post(body, headers, '198.51.100.7')
      assert.equal(refused.statusCode, 429)
      assert.equal(errorOf(refused).code, 'rate_limited')
      assert.ok(Number(refused.headers['retry-after']) >= 1)
      assert.equal((await post(body, headers, '198.51.100.8')).statusCode, 200)
    })
  })

  describe(`POST /v1/credentials/revoke (${configuration.name})`, () => {
    let t: TestApp
    const revoke = async (credentials: unknown, remoteAddress = '203.0.113.1') => await t.app.inject({
      method: 'POST', url: '/v1/credentials/revoke', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ credentials }), remoteAddress
    })
    beforeEach(async () => {
      t = await buildTestApp({}, { backend: configuration.backend, limiterBackend: configuration.limiterBackend })
    })
    afterEach(async () => { await t.close() })

    it('When the holder revokes a token, then it is answered 202 and refused within a second', async () => {
      const token = await t.newKey()
      assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(token) })).statusCode, 200)
      const response = await revoke([token])
      assert.equal(response.statusCode, 202)
      assert.ok(await revoked(t, token), 'revoked within a second')
      t.clock.advance(1000)
      assert.equal((await t.app.inject({ url: '/v1/pets', headers: bearer(token) })).statusCode, 401)
      const { key } = await findKey(t.storage, token, t.clock.now())
      assert.equal((await t.storage.firstKeyLeaks([key.id]))[0]?.report, 'holder')
    })

    it('When 100 unknown tokens and 100 real ones are revoked, then both get the same answer in comparable time', async () => {
      const real = await Promise.all(Array.from({ length: 100 }, async () => await t.newKey()))
      const unknown = Array.from({ length: 100 }, () => generateToken('production'))
      // Warm both paths once, so that neither pays for the first compile.
      await revoke([generateToken('production')], '203.0.113.9')
      let started = performance.now()
      const forUnknown = await revoke(unknown, '203.0.113.2')
      const unknownMs = performance.now() - started
      started = performance.now()
      const forReal = await revoke(real, '203.0.113.3')
      const realMs = performance.now() - started
      assert.equal(forReal.statusCode, 202)
      assert.equal(forUnknown.statusCode, forReal.statusCode)
      assert.equal(forUnknown.body, forReal.body)
      assert.ok(realMs < unknownMs * 5 + 50, `real ${realMs.toFixed(1)} ms, unknown ${unknownMs.toFixed(1)} ms`)
      for (const token of real) assert.ok(await revoked(t, token, 5000))
    })

    it('When one address sends more than 10 revocations in a minute, then it gets 429, and another address does not', async () => {
      for (let i = 0; i < 10; i++) assert.equal((await revoke([generateToken('production')], '203.0.113.4')).statusCode, 202)
      const refused = await revoke([generateToken('production')], '203.0.113.4')
      assert.equal(refused.statusCode, 429)
      assert.equal(errorOf(refused).code, 'rate_limited')
      assert.equal((await revoke([generateToken('production')], '203.0.113.5')).statusCode, 202)
    })

    it('When the body is wrong, then it gets a 4xx with the Error body, never a 5xx', async () => {
      for (const [what, credentials] of [
        ['none', []], ['101', Array.from({ length: 101 }, () => 'x')], ['a number', [1]], ['not an array', 'pet_live_x']
      ] as const) {
        const response = await revoke(credentials, '203.0.113.6')
        assert.equal(response.statusCode, 400, what)
        assert.equal(errorOf(response).code, 'invalid_request', what)
      }
    })
  })
}
