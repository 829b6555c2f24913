// Guessing API tokens from one address, against the real server: every
// guess is well formed (right prefix, right checksum), so none is turned
// away by its shape and each one reaches the key lookup. Requests without a
// valid key are limited per client address, 60 a minute (docs/API.md: Rate
// limits); the client chooses its forwarded
// headers, so they must not buy it more guesses unless TRUST_PROXY says
// that the proxy it came through sets them.
import { after, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { generateToken } from '../../src/keys/tokens.js'
import { ANONYMOUS_PER_MINUTE } from '../../src/limits/plans.js'
import { makeTempDir, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'

/** More than twice the limit: however a minute boundary splits them, one window sees the cut-off. */
const GUESSES = 150

interface Guess {
  status: number
  code: string
  /** The window the answer was counted in (X-RateLimit-Reset, Unix seconds). */
  window: string
  retryAfter: string | null
}

/** A different made-up client address for each guess, IPv4 and IPv6 in turn (documentation ranges: nothing is sent there). */
function forgedAddress (i: number): string {
  return i % 2 === 0 ? `203.0.${113 + (i >> 8) % 2}.${i % 256}` : `2001:db8:${i.toString(16)}::1`
}

/** One guess, with every header a client may use to name another address. */
async function guess (server: ServerProcess, address: string): Promise<Guess> {
  const response = await fetch(`${server.origin}/v1/pets?limit=1`, {
    headers: {
      authorization: `Bearer ${generateToken('production')}`,
      'x-forwarded-for': address,
      'x-real-ip': address,
      forwarded: `for="${address}"`,
      'true-client-ip': address,
      'cf-connecting-ip': address
    },
    signal: AbortSignal.timeout(5_000)
  })
  const body = await response.json() as { code?: string }
  return { status: response.status, code: body.code ?? '', window: response.headers.get('x-ratelimit-reset') ?? '', retryAfter: response.headers.get('retry-after') }
}

async function guessAll (server: ServerProcess, addressOf: (i: number) => string): Promise<{ guesses: Guess[], ms: number }> {
  const started = Date.now()
  const guesses: Guess[] = []
  // One after another: the order of the answers is what is checked.
  for (let i = 0; i < GUESSES; i++) guesses.push(await guess(server, addressOf(i)))
  return { guesses, ms: Date.now() - started }
}

function byWindow (guesses: Guess[]): Map<string, Guess[]> {
  const windows = new Map<string, Guess[]>()
  for (const g of guesses) windows.set(g.window, [...(windows.get(g.window) ?? []), g])
  return windows
}

function figures (t: TestContext, what: string, guesses: Guess[], ms: number): void {
  const count = (status: number): number => guesses.filter((g) => g.status === status).length
  t.diagnostic(`${what}: ${guesses.length} guesses in ${ms} ms over ${byWindow(guesses).size} window(s): ${count(401)} got 401, ${count(429)} got 429`)
}

describe('guessing tokens from one address', { timeout: 120_000 }, () => {
  const servers: ServerProcess[] = []
  const dirs: string[] = []
  after(async () => {
    await Promise.all(servers.map(async (server) => { await server.dispose() }))
    for (const dir of dirs) removeTempDir(dir)
  })

  async function serve (env: Record<string, string>): Promise<ServerProcess> {
    const dir = makeTempDir()
    dirs.push(dir)
    const server = await startServer({ DATABASE_URL: sqliteUrl(dir), ...env })
    servers.push(server)
    return server
  }

  for (const [when, env] of [
    ['TRUST_PROXY is unset', {}],
    ['TRUST_PROXY names another proxy than the client', { TRUST_PROXY: '10.0.0.1' }]
  ] as const) {
    it(`When ${when} and every guess forges another X-Forwarded-For, then after ${ANONYMOUS_PER_MINUTE} in a minute every guess gets 429, never 401`, async (t) => {
      // Arrange
      const server = await serve(env)

      // Act
      const { guesses, ms } = await guessAll(server, forgedAddress)

      // Assert
      figures(t, when, guesses, ms)
      for (const g of guesses) assert.ok(g.status === 401 || g.status === 429, `a guess got ${g.status}`)
      let cutOff = false
      for (const [window, answers] of byWindow(guesses)) {
        const reached = answers.filter((g) => g.status === 401).length
        assert.ok(reached <= ANONYMOUS_PER_MINUTE, `${reached} guesses reached a 401 in the window ending ${window}`)
        // Inside a window, the answers are 401s and then only 429s.
        const first429 = answers.findIndex((g) => g.status === 429)
        if (first429 !== -1) {
          assert.equal(first429, ANONYMOUS_PER_MINUTE, `the first 429 of the window ending ${window}`)
          assert.deepEqual(answers.slice(first429).filter((g) => g.status !== 429), [], 'a 401 after the first 429')
          for (const g of answers.slice(first429)) {
            assert.equal(g.code, 'rate_limited')
            assert.ok(Number(g.retryAfter) >= 1, `Retry-After: ${g.retryAfter}`)
          }
          cutOff = true
        }
      }
      assert.ok(cutOff, 'no window saw the limit reached')
    })
  }

  it('When TRUST_PROXY names the proxy the client comes through, then X-Forwarded-For is believed: each forwarded address has its own limit', async (t) => {
    // Arrange: the test's requests come from 127.0.0.1, the trusted proxy.
    const server = await serve({ TRUST_PROXY: '127.0.0.1' })

    // Act
    const spread = await guessAll(server, forgedAddress)
    const one = await guessAll(server, () => '198.51.100.7')

    // Assert: the switch works both ways.
    figures(t, 'TRUST_PROXY=127.0.0.1, a new forwarded address each time', spread.guesses, spread.ms)
    figures(t, 'TRUST_PROXY=127.0.0.1, one forwarded address', one.guesses, one.ms)
    assert.deepEqual(spread.guesses.filter((g) => g.status !== 401), [], 'each forwarded address has its own 60')
    for (const [window, answers] of byWindow(one.guesses)) {
      assert.ok(answers.filter((g) => g.status === 401).length <= ANONYMOUS_PER_MINUTE, `the window ending ${window}`)
    }
    assert.ok(one.guesses.some((g) => g.status === 429), 'one forwarded address is still limited')
  })
})
