// Rolling a key, at the gate, on each configuration (docs/KEYS.md:
// The admin API): during the overlap both tokens are one key (one count, one ban);
// the token rolled away is refused once its overlap ends, at once with an
// overlap of 0, at once when the key is rolled again, and with the key when
// it is revoked. A cached lookup may keep a token's old state for 500 ms on
// the monotonic clock, so the tests that change a token already looked up
// move that clock past it first.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey, revokeKey, rollKey } from '../../src/keys/manage.js'
import { generateToken } from '../../src/keys/tokens.js'
import { CONFIGURATIONS, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { pollUntil } from '../support/process.js'
import { awayFromMinuteEdge } from '../support/redis.js'

/** Longer than a cached lookup lives (keys/lookup/cache.ts). */
const PAST_THE_CACHE_MS = 501
/** An hour's overlap: longer than any of these tests runs. */
const HOUR_S = 3600
const BAN_THRESHOLD = 3

for (const configuration of CONFIGURATIONS) {
  describe(`rolling a key at the gate (${configuration.name})`, () => {
    let t: TestApp
    beforeEach(async () => {
      t = await buildTestApp({ RATE_LIMIT_BAN_THRESHOLD: String(BAN_THRESHOLD), RATE_LIMIT_BAN_SECONDS: '900' }, configuration)
      // The Redis store counts on Redis's clock: a test's requests must share one of its minutes.
      if (configuration.limiterBackend === 'redis') await awayFromMinuteEdge(10_000)
    })
    afterEach(async () => { await t.close() })

    /** An enterprise key with these limits (default: far more than a test sends); its id and token. */
    async function key (perMinute = 100, perDay = 10_000): Promise<{ id: number, token: string }> {
      const issued = await issueKey(t.storage, { plan: 'enterprise', name: 'rolled', perMinute, perDay, environment: t.config.environment, now: t.clock.now() })
      return { id: issued.id, token: issued.token }
    }

    async function roll (id: number, overlapSeconds: number): Promise<string> {
      const rolled = await rollKey(t.storage, id, overlapSeconds, t.clock.now())
      assert.ok(rolled !== undefined, `no key ${id}`)
      return rolled.token
    }

    const list = async (token: string, remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> =>
      await t.app.inject({ url: '/v1/pets', headers: bearer(token), remoteAddress })

    /** Status and error code, or status and X-RateLimit-Remaining when admitted. */
    function outcome (response: LightMyRequestResponse): string {
      return response.statusCode === 200
        ? `200 remaining ${String(response.headers['x-ratelimit-remaining'])}`
        : `${response.statusCode} ${errorOf(response).code}`
    }

    it('When a key is rolled with an overlap, then its old and new tokens are both accepted and draw on one X-RateLimit-Remaining', async () => {
      // Arrange
      const { id, token: old } = await key(10)
      const before = await list(old)

      // Act
      const current = await roll(id, HOUR_S)
      // Past the old token's cached lookup, so that it is found as the previous token.
      t.clock.advance(PAST_THE_CACHE_MS)
      const answers = [await list(old), await list(current), await list(old), await list(current)]

      // Assert
      assert.equal(outcome(before), '200 remaining 9')
      assert.deepEqual(answers.map(outcome), ['200 remaining 8', '200 remaining 7', '200 remaining 6', '200 remaining 5'])
      assert.deepEqual(answers.map((answer) => answer.headers['x-ratelimit-limit']), ['10', '10', '10', '10'], 'the new token has the key\'s limits')
    })

    it('When the old token earns a ban during the overlap, then the new token is banned too', async () => {
      // Arrange
      const { id, token: old } = await key(1)
      const current = await roll(id, HOUR_S)
      assert.equal(outcome(await list(old)), '200 remaining 0')
      for (let i = 0; i < BAN_THRESHOLD; i++) assert.equal(outcome(await list(old)), '429 rate_limited')

      // Act
      const onNew = await list(current)
      const onOld = await list(old)

      // Assert
      assert.equal(outcome(onNew), '429 api_key_banned')
      assert.equal(onNew.headers['x-ratelimit-remaining'], '0')
      assert.equal(outcome(onOld), '429 api_key_banned')
    })

    it('When the overlap ends, then the old token gets 401 invalid_api_key from that instant, even while its lookup is cached, and the new one goes on', async () => {
      // Arrange
      const { id, token: old } = await key()
      const current = await roll(id, 60)
      const during = await list(old)
      t.clock.advance(59_999)
      const lastInstant = await list(old)

      // Act
      t.clock.advance(1)
      const after = await list(old)
      const onNew = await list(current)

      // Assert
      assert.deepEqual([during.statusCode, lastInstant.statusCode], [200, 200])
      assert.equal(after.statusCode, 401)
      assert.equal(errorOf(after).code, 'invalid_api_key')
      assert.match(String(after.headers['www-authenticate']), /^Bearer realm="petstore", error="invalid_token"/)
      assert.equal(after.headers['x-ratelimit-limit'], '60', 'the refused token was counted against its address, not the key')
      assert.equal(onNew.statusCode, 200)
    })

    it('When a key is rolled with an overlap of 0, then its old token is refused at once (a cached lookup within 500 ms), and the new one is accepted', async () => {
      // Arrange: one old token just looked up, so cached; one never looked up.
      const cached = await key()
      const cold = await key()
      assert.equal((await list(cached.token)).statusCode, 200)

      // Act
      const cachedNew = await roll(cached.id, 0)
      const coldNew = await roll(cold.id, 0)
      const coldOld = await list(cold.token)
      t.clock.advance(PAST_THE_CACHE_MS)
      const cachedOld = await list(cached.token)

      // Assert
      assert.equal(outcome(coldOld), '401 invalid_api_key')
      assert.equal(outcome(cachedOld), '401 invalid_api_key')
      assert.equal((await list(cachedNew)).statusCode, 200)
      assert.equal((await list(coldNew)).statusCode, 200)
    })

    it('When a key is rolled again during an overlap, then the oldest token is refused at once and the two latest are accepted', async () => {
      // Arrange
      const { id, token: first } = await key()
      const second = await roll(id, HOUR_S)
      assert.equal((await list(first)).statusCode, 200)

      // Act
      const third = await roll(id, HOUR_S)
      t.clock.advance(PAST_THE_CACHE_MS)
      const answers = [await list(first), await list(second), await list(third)]

      // Assert
      assert.deepEqual(answers.map(outcome), ['401 invalid_api_key', '200 remaining 98', '200 remaining 97'])
    })

    it('When a key is revoked during an overlap, then both its tokens are refused', async () => {
      // Arrange
      const { id, token: old } = await key()
      const current = await roll(id, HOUR_S)
      assert.deepEqual([(await list(old)).statusCode, (await list(current)).statusCode], [200, 200])

      // Act
      await revokeKey(t.storage, id, t.clock.now())
      t.clock.advance(PAST_THE_CACHE_MS)
      const answers = [await list(old), await list(current)]

      // Assert
      assert.deepEqual(answers.map(outcome), ['401 invalid_api_key', '401 invalid_api_key'])
    })

    it('When an address is over its anonymous limit, then the new token of a key rolled meanwhile is served from it once the key index has read the new token', async () => {
      // Arrange: the address spends its minute on unknown tokens, so that a
      // token the index does not know is refused from it without a lookup.
      const address = '203.0.113.7'
      for (let i = 0; i < 60; i++) assert.equal((await list(generateToken('production'), address)).statusCode, 401)
      assert.equal((await list(generateToken('production'), address)).statusCode, 429, 'the address was not over its limit')
      const { id } = await key(10)

      // Act: the index reads the token table every 500 ms, on the real clock.
      const current = await roll(id, HOUR_S)
      const served = await pollUntil(async () => {
        const response = await list(current, address)
        return response.statusCode === 200 ? response : undefined
      }, { ms: 10_000, every: 50, what: 'the new token to be served from an address over its limit' })

      // Assert
      assert.equal(served.headers['x-ratelimit-limit'], '10', 'counted against the key, not the address')
      assert.equal(served.headers['x-ratelimit-remaining'], '9')
    })
  })

  describe(`regressions of rolling (${configuration.name})`, () => {
    let t: TestApp
    beforeEach(async () => {
      t = await buildTestApp({ RATE_LIMIT_BAN_THRESHOLD: String(BAN_THRESHOLD), RATE_LIMIT_BAN_SECONDS: '900' }, configuration)
      if (configuration.limiterBackend === 'redis') await awayFromMinuteEdge(10_000)
    })
    afterEach(async () => { await t.close() })

    const list = async (token: string): Promise<LightMyRequestResponse> => await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

    async function spentKey (perMinute: number, perDay: number): Promise<{ id: number, token: string }> {
      const issued = await issueKey(t.storage, { plan: 'enterprise', name: 'spent', perMinute, perDay, environment: t.config.environment, now: t.clock.now() })
      for (let i = 0; i < Math.min(perMinute, perDay); i++) assert.equal((await list(issued.token)).statusCode, 200)
      return { id: issued.id, token: issued.token }
    }

    for (const overlap of [0, HOUR_S]) {
      it(`When a key at its minute's limit, and one at its day's, are rolled (overlap ${overlap} s), then the new tokens get 429 rate_limited with nothing remaining (regression: rolling never resets a quota)`, async () => {
        // Arrange
        const minute = await spentKey(2, 1000)
        const day = await spentKey(100, 2)

        // Act
        const answers = [
          await list((await rollKey(t.storage, minute.id, overlap, t.clock.now())).token),
          await list((await rollKey(t.storage, day.id, overlap, t.clock.now())).token)
        ]

        // Assert
        assert.deepEqual(answers.map((answer) => answer.statusCode === 429 ? errorOf(answer).code : answer.statusCode), ['rate_limited', 'rate_limited'])
        assert.deepEqual(answers.map((answer) => answer.headers['x-ratelimit-remaining']), ['0', '0'])
        assert.deepEqual(answers.map((answer) => answer.headers['x-ratelimit-limit']), ['2', '2'])
      })

      it(`When a banned key is rolled (overlap ${overlap} s), then its new token is banned until the ban's end (regression: rolling never lifts a ban)`, async () => {
        // Arrange
        const { id, token: old } = await spentKey(1, 1000)
        for (let i = 0; i < BAN_THRESHOLD; i++) assert.equal(errorOf(await list(old)).code, 'rate_limited')
        const banned = await list(old)
        assert.equal(errorOf(banned).code, 'api_key_banned')

        // Act
        const current = (await rollKey(t.storage, id, overlap, t.clock.now())).token
        const onNew = await list(current)

        // Assert
        assert.equal(onNew.statusCode, 429)
        assert.equal(errorOf(onNew).code, 'api_key_banned')
        // The Redis store tells a ban's end as the time it has left, from when its answer came: a second either way.
        const moved = Number(onNew.headers['x-ratelimit-reset']) - Number(banned.headers['x-ratelimit-reset'])
        assert.ok(Math.abs(moved) <= 1, `the ban's end moved by ${moved} s with the roll`)
        assert.ok(Number(onNew.headers['retry-after']) > 60, `Retry-After: ${String(onNew.headers['retry-after'])}`)
      })
    }
  })
}
