// The scan that ends every `npm test` (scripts/log-scan.js, called by
// scripts/run-tests.js): it must find a secret wherever a log line holds
// one, name the file and the line, and not print the secret whole; and it
// must let the lines the service really writes through.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateToken } from '../../src/keys/tokens.js'
import { PROJECT_ROOT, makeTempDir, removeTempDir } from '../support/process.js'

function scan (dir: string): { code: number | null, output: string } {
  const result = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'log-scan.js'), dir], { encoding: 'utf8', timeout: 30_000 })
  return { code: result.status, output: result.stdout + result.stderr }
}

/** Lines as the service writes them, with nothing secret in them. */
const CLEAN = [
  '{"level":30,"requestId":"a1","method":"GET","route":"/v1/pets","url":"/v1/pets?limit=2&cursor=AQAAAAAAAAACAR","status":200,"msg":"request completed"}',
  '{"level":30,"requestId":"a2","method":"GET","url":"/v1/pets?access_token=[redacted]","status":401,"code":"missing_api_key","msg":"request completed"}',
  '{"level":30,"req":{"headers":{"authorization":"[redacted]","idempotency-key":"[redacted]"}},"msg":"a line with headers"}',
  '{"level":40,"msg":"Send your API key as Authorization: Bearer <API_KEY>."}',
  '{"level":30,"msg":"WWW-Authenticate: Bearer realm=\\"petstore\\", error=\\"invalid_token\\""}',
  'listening on http://127.0.0.1:8080'
]

describe('the log scan of every test run', () => {
  let dir: string | undefined
  let clean: string | undefined
  const token = generateToken('production')
  const staging = generateToken('staging')

  before(() => {
    dir = makeTempDir()
    clean = makeTempDir()
    writeFileSync(join(dir, 'server.test.1.server-1.stdout.log'), [
      ...CLEAN,
      `{"level":30,"url":"/v1/pets?access_token=${token}","msg":"request completed"}`,
      ...CLEAN
    ].join('\n'))
    writeFileSync(join(dir, 'request-log.test.2.in-process.log'), [
      '{"level":30,"req":{"headers":{"authorization":"Bearer not-a-petstore-key"}},"msg":"incoming request"}',
      `{"level":50,"err":{"message":"bad header: authorization: Bearer ${staging}"},"msg":"request failed"}`,
      '{"level":50,"msg":"Authorization: Basic dXNlcjpwYXNzd29yZA=="}',
      '{"level":50,"msg":"forwarded bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"}'
    ].join('\n'))
    writeFileSync(join(clean, 'server.test.3.server-1.stdout.log'), CLEAN.join('\n'))
  })
  after(() => {
    removeTempDir(dir)
    removeTempDir(clean)
  })

  it('When a log holds a token or an Authorization value, then the scan fails and names each file and line', () => {
    const { code, output } = scan(dir ?? '')

    assert.equal(code, 1, output)
    assert.match(output, /server\.test\.1\.server-1\.stdout\.log:7: an API token/)
    assert.match(output, /request-log\.test\.2\.in-process\.log:1: an Authorization field/)
    assert.match(output, /request-log\.test\.2\.in-process\.log:2: an API token/)
    assert.match(output, /request-log\.test\.2\.in-process\.log:2: an Authorization header/)
    assert.match(output, /request-log\.test\.2\.in-process\.log:3: an Authorization header/)
    assert.match(output, /request-log\.test\.2\.in-process\.log:4: a bearer credential/)
    assert.doesNotMatch(output, /server\.test\.1\.server-1\.stdout\.log:(?!7:)\d+:/, 'a clean line was reported')
  })

  it('When the scan reports a secret, then it prints only its start', () => {
    const { output } = scan(dir ?? '')

    assert.ok(!output.includes(token), 'the token was printed whole')
    assert.ok(!output.includes(staging), 'the token was printed whole')
    assert.ok(!output.includes('not-a-petstore-key'), 'the Authorization value was printed whole')
  })

  it('When the logs hold only what the service writes, then the scan passes', () => {
    const { code, output } = scan(clean ?? '')

    assert.equal(code, 0, output)
    assert.match(output, /no token or Authorization value in 1 log files \(6 lines\)/)
  })

  // Regression: "token redaction misses encoded forms". The scan looked for
  // `pet_live_` and 20 characters as written: a percent-encoded token, or
  // its secret alone, passed it.
  it('Token redaction misses encoded forms: when a log holds a token percent-encoded or its secret alone, then the scan fails on each line', () => {
    // Arrange
    const encoded = makeTempDir()
    try {
      const secret = token.slice('pet_live_'.length)
      writeFileSync(join(encoded, 'request-log.test.4.in-process.log'), [
        `{"url":"/v1/pets?access_token=pet%5Flive%5F${secret}"}`,
        `{"url":"/v1/pets?access_token=${[...token].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}"}`,
        `{"url":"/v1/pets?key=${secret}"}`,
        `{"requestId":"retry-of-${staging.slice('pet_test_'.length)}"}`,
        ...CLEAN
      ].join('\n'))

      // Act
      const { code, output } = scan(encoded)

      // Assert
      assert.equal(code, 1, output)
      for (const line of [1, 2, 3, 4]) assert.match(output, new RegExp(`request-log\\.test\\.4\\.in-process\\.log:${line}: an API token`))
      assert.doesNotMatch(output, /in-process\.log:(?:[5-9]|10):/, 'a clean line was reported')
      assert.ok(!output.includes(secret.slice(0, 10)), 'the secret was printed')
    } finally {
      removeTempDir(encoded)
    }
  })
})
