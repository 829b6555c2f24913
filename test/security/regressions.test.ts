// Regression tests for what the security tests found, each named after its
// fix: three patterns that took quadratic time on a crafted input (found by
// recheck, test/security/redos.test.ts), and request URLs logged with a
// token in them (the log scan of scripts/log-scan.js).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { ConfigError, loadConfig } from '../../src/config.js'
import { generateToken } from '../../src/keys/tokens.js'
import { check } from 'recheck'
import { BEARER, createIdentify } from '../../src/keys/identify.js'
import { ApiError } from '../../src/errors.js'
import { buildTestApp, type TestApp } from '../support/app.js'

describe('regressions', () => {
  // The Bearer pattern's own regression test asks recheck of the pattern
  // the service runs: restoring the old `(?: +(.*))?` makes it fail, as no
  // test of answers could without timing them. The other patterns are
  // pinned by their answers here and checked by recheck in redos.test.ts.
  it('When the Bearer pattern is checked, then recheck finds no attack string, and the attack string of the old pattern is refused on its shape (regression: the Bearer pattern backtracked quadratically)', async () => {
    // Arrange: recheck's attack on the old pattern; a line break is the one character `.` does not match.
    process.env.RECHECK_BACKEND = 'pure'
    const identify = createIdentify({ environment: 'production', keys: { mayExistNow: async () => true, find: async () => { throw new Error('looked up') } }, now: Date.now })

    // Act
    const diagnostics = await check(BEARER.source, BEARER.flags, { timeout: 60_000 })
    const identity = identify.read(`Bearer${' '.repeat(32_000)}\nx`)

    // Assert
    assert.equal(diagnostics.status, 'safe', diagnostics.status === 'vulnerable' ? `attack: ${diagnostics.attack.pattern}` : diagnostics.status)
    assert.ok(identity instanceof ApiError, 'the header was taken for a key')
    assert.equal(identity.status, 401)
  })

  it('When the Bearer pattern is fixed, then every form of the header it read before reads the same (regression: the Bearer pattern backtracked quadratically)', async () => {
    const identify = createIdentify({ environment: 'production', keys: { mayExistNow: async () => true, find: async () => undefined }, now: Date.now })
    const token = generateToken('production')
    const codeOf = async (authorization: string): Promise<string | undefined> => {
      const read = identify.read(authorization)
      const identity = read instanceof ApiError ? read : await identify.find(read)
      return identity instanceof ApiError ? identity.code : undefined
    }

    assert.equal(await codeOf('Bearer'), 'missing_api_key')
    assert.equal(await codeOf('Bearerx'), 'missing_api_key')
    assert.equal(await codeOf('Bearer\tx'), 'missing_api_key')
    assert.equal(await codeOf(`Bearer    ${token}`), 'invalid_api_key', 'several spaces: the key is read, and unknown')
    assert.equal(await codeOf(`bearer ${token} ${token}`), 'invalid_api_key')
  })

  it('When PUBLIC_BASE_URL has 32,000 slashes before its last character, then loadConfig refuses it as not ending in /v1 (regression: the trailing-slash pattern backtracked quadratically)', () => {
    assert.throws(() => loadConfig({ PUBLIC_BASE_URL: `https://api.example.com/v1${'/'.repeat(32_000)}x/` }),
      (error: unknown) => error instanceof ConfigError && /\/v1/.test(error.message))
  })

  it('When PUBLIC_BASE_URL ends in slashes, then they are still removed (regression: the trailing-slash pattern backtracked quadratically)', () => {
    assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/v1///' }).publicBaseUrl, 'https://api.example.com/v1')
  })

  describe('the docs page', () => {
    let t: TestApp
    before(async () => { t = await buildTestApp() })
    after(async () => { await t.close() })

    it('When the docs page is served, then its CSP keeps every directive but upgrade-insecure-requests (regression: the CSP rewrite pattern backtracked quadratically)', async () => {
      const page = await t.app.inject({ url: '/v1/docs/' })
      const csp = String(page.headers['content-security-policy'] ?? '')

      assert.doesNotMatch(csp, /upgrade-insecure-requests/)
      for (const directive of ['default-src', 'base-uri', 'object-src', 'script-src', 'style-src']) assert.match(csp, new RegExp(`(^|; )${directive} `), csp)
      assert.doesNotMatch(csp, /;;|\s$/, csp)
    })
  })

  describe('the request log', () => {
    let t: TestApp
    const lines: string[] = []
    before(async () => {
      // The most verbose level: the line written when a request arrives carries the URL too.
      const logger = pino({ level: 'trace' }, { write: (line: string) => { lines.push(line) } })
      t = await buildTestApp({}, { logger })
    })
    after(async () => { await t.close() })

    it('When a token is sent in the URL, then the request\'s log lines carry [redacted] in its place (regression: request URLs were logged as sent)', async () => {
      // Arrange: a real key, sent where RFC 6750 §2.3 puts it, in a path, and percent-encoded.
      const token = await t.newKey('pro')
      const encoded = token.replaceAll('_', '%5F')

      // Act
      await t.app.inject({ url: `/v1/pets?access_token=${token}` })
      await t.app.inject({ url: `/v1/pets/${token}` })
      await t.app.inject({ url: `/v1/pets?access_token=${encoded}` })
      await t.app.inject({ url: `/v1/pets?limit=1&access_token=${generateToken('staging')}` })

      // Assert
      const urls = lines.map((line) => JSON.parse(line) as { url?: string }).flatMap((entry) => entry.url === undefined ? [] : [entry.url])
      assert.ok(urls.length >= 8, `two lines per request: ${urls.length}`)
      for (const line of lines) assert.doesNotMatch(line, /pet(?:_|%5F)(?:live|test)(?:_|%5F)[0-9A-Za-z]{20}/i, line)
      assert.ok(urls.includes('/v1/pets?access_token=[redacted]'), urls.join('\n'))
      assert.ok(urls.includes('/v1/pets/[redacted]'), urls.join('\n'))
      assert.ok(urls.includes('/v1/pets?limit=1&access_token=[redacted]'), urls.join('\n'))
    })
  })
})
