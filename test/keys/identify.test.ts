import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from '../../src/db/sqlite/driver.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { issueKey } from '../../src/keys/manage.js'
import { generateToken, hashToken } from '../../src/keys/tokens.js'
import { createIdentify } from '../../src/keys/identify.js'
import { createKeyLookup } from '../../src/keys/lookup.js'
import { ApiError } from '../../src/errors.js'
import { appWithKey, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { CLOCK_START } from '../support/fixtures.js'

describe('authentication', () => {
  let t: TestApp
  let token: string
  before(async () => { ({ t, token } = await appWithKey('free')) })
  after(async () => { await t.close() })

  const list = (authorization?: string) => t.app.inject({ url: '/v1/pets', headers: authorization === undefined ? {} : { authorization } })

  it('When a valid key is sent, then the request passes', async () => {
    assert.equal((await list(`Bearer ${token}`)).statusCode, 200)
  })

  it('When the scheme is written in another case, then the key is still read', async () => {
    assert.equal((await list(`bearer ${token}`)).statusCode, 200)
    assert.equal((await list(`BEARER ${token}`)).statusCode, 200)
  })

  it('When no key is sent, then 401 missing_api_key with WWW-Authenticate naming the realm only', async () => {
    const response = await list()

    assert.equal(response.statusCode, 401)
    assert.equal(errorOf(response).code, 'missing_api_key')
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore"')
  })

  it('When another scheme is used, then 401 missing_api_key', async () => {
    const response = await list('Basic dXNlcjpwYXNz')
    assert.equal(errorOf(response).code, 'missing_api_key')
  })

  it('When Bearer comes with no key, then 401 missing_api_key without error="invalid_token"', async () => {
    const response = await list('Bearer ')
    assert.equal(errorOf(response).code, 'missing_api_key')
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore"')
  })

  for (const [when, value] of [
    ['the token is garbage', 'Bearer hello'],
    ['Bearer has two tokens', 'Bearer abc def'],
    ['the token has a valid shape but is unknown', 'UNKNOWN']
  ]) {
    it(`When ${when}, then 401 invalid_api_key with error="invalid_token"`, async () => {
      let header = value as string
      if (value === 'UNKNOWN') header = `Bearer ${generateToken('production')}`
      const response = await list(header)

      assert.equal(response.statusCode, 401)
      assert.equal(errorOf(response).code, 'invalid_api_key')
      assert.match(String(response.headers['www-authenticate']), /^Bearer realm="petstore", error="invalid_token"/)
    })
  }

  it('When one character of the token is changed, then 401 invalid_api_key says it is not a petstore key, without a lookup', async () => {
    // Arrange: the storage's lookups counted, for this test only; a well-formed unknown token shows that they are.
    const mistyped = `${token.slice(0, 12)}${token[12] === 'a' ? 'b' : 'a'}${token.slice(13)}`
    const find = t.storage.findApiKeyByTokenHash
    let lookups = 0
    t.storage.findApiKeyByTokenHash = async (hash) => { lookups++; return await find.call(t.storage, hash) }

    // Act
    let response, lookupsForMistyped, lookupsForUnknown
    try {
      response = await list(`Bearer ${mistyped}`)
      lookupsForMistyped = lookups
      await list(`Bearer ${generateToken('production')}`)
      lookupsForUnknown = lookups - lookupsForMistyped
    } finally {
      t.storage.findApiKeyByTokenHash = find
    }

    // Assert
    assert.equal(response.statusCode, 401)
    assert.equal(errorOf(response).code, 'invalid_api_key')
    assert.match(errorOf(response).message, /not a petstore key/)
    assert.match(String(response.headers['www-authenticate']), /^Bearer realm="petstore", error="invalid_token"/)
    assert.equal(lookupsForMistyped, 0, 'the mistyped token was looked up')
    assert.equal(lookupsForUnknown, 1, 'lookups are not counted')
  })

  it('When a staging key reaches the production service, then 401 says which environment it belongs to', async () => {
    const response = await list(`Bearer ${generateToken('staging')}`)

    assert.equal(response.statusCode, 401)
    assert.equal(errorOf(response).code, 'invalid_api_key')
    assert.match(errorOf(response).message, /staging/)
  })

  it('When a key is revoked, then it is refused within one second', async () => {
    const revoked = await t.newKey('free')
    assert.equal((await list(`Bearer ${revoked}`)).statusCode, 200)
    const key = await t.storage.findApiKeyByTokenHash(hashToken(revoked))
    assert.ok(key !== undefined)
    await t.storage.changeApiKey(key.key.id, () => ({ revokedAt: t.clock.now() }))
    t.clock.advance(1000)

    const response = await list(`Bearer ${revoked}`)
    assert.equal(response.statusCode, 401)
    assert.equal(errorOf(response).code, 'invalid_api_key')
  })
})

describe('API keys at rest', () => {
  let dir: string | undefined
  after(() => { if (dir !== undefined) rmSync(dir, { recursive: true, force: true }) })

  it('When a key is created, then its row holds the SHA-256 of the token and, of the token itself, only its hint: the prefix and the last four characters', async () => {
    // Arrange: a database file, so that its rows can be read as they are stored.
    dir = mkdtempSync(join(tmpdir(), 'petstore-keys-'))
    const file = join(dir, 'keys.db')
    const t = await buildTestApp({}, { storage: openSqlite(`sqlite:${file}`) })
    const token = await t.newKey('free')
    await t.close()

    // Act
    const raw = new Database(file, { readonly: true })
    const rows = raw.prepare('SELECT * FROM api_keys').all() as Array<Record<string, unknown>>
    raw.close()

    // Assert
    assert.equal(rows.length, 1)
    assert.equal(rows[0]?.token_hash, createHash('sha256').update(token).digest('hex'))
    const stored = JSON.stringify(rows, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value)
    assert.ok(!stored.includes(token.slice('pet_live_'.length, -6)), 'the random part of the token is stored')
    assert.ok(!stored.includes(token), 'a token is stored')
    assert.equal(rows[0]?.token_hint, `pet_live_…${token.slice(-4)}`)
  })
})

describe('authentication on a staging instance', () => {
  it('When a production key reaches staging, then 401; a staging key passes', async () => {
    const t = await buildTestApp({ PETSTORE_ENV: 'staging' })
    try {
      const staging = await t.newKey('free')
      assert.match(staging, /^pet_test_/)
      const refused = await t.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${generateToken('production')}` } })
      const accepted = await t.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${staging}` } })

      assert.equal(refused.statusCode, 401)
      assert.match(errorOf(refused).message, /production/)
      assert.equal(accepted.statusCode, 200)
    } finally {
      await t.close()
    }
  })
})

describe('the key lookup cache', () => {
  it('When more than 10,000 different tokens are tried, then a key in steady use stays cached and is not looked up again', async () => {
    // Arrange: a real storage, with its lookups counted.
    const storage = openSqlite('sqlite::memory:')
    const clock = { ms: CLOCK_START }
    const now = (): number => clock.ms
    const key = await issueKey(storage, { plan: 'free', name: 'steady', perMinute: undefined, perDay: undefined, environment: 'production', now: now() })
    let lookups = 0
    const find = storage.findApiKeyByTokenHash.bind(storage)
    storage.findApiKeyByTokenHash = async (hash) => { lookups++; return await find(hash) }
    const keys = createKeyLookup({ storage, environment: 'production', clock: now })
    const identifier = createIdentify({ environment: 'production', keys, now: Date.now })
    const identify = async (header: string): Promise<unknown> => {
      const token = identifier.read(header)
      return token instanceof ApiError ? token : await identifier.find(token)
    }
    const request = (token: string): string => `Bearer ${token}`
    assert.ok(!(await identify(request(key.token)) instanceof ApiError), 'the steady key was not identified')

    // Act: 10,500 unknown tokens, the steady key used every 100 of them.
    for (let i = 0; i < 10_500; i++) {
      await identify(request(generateToken('production')))
      if (i % 100 === 0) await identify(request(key.token))
    }
    const before = lookups
    await identify(request(key.token))

    // Assert
    assert.equal(lookups, before, 'the steady key was looked up again: the cache was emptied')
    assert.equal(before, 1 + 10_500)
    await storage.close()
  })
})
