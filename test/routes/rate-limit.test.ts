// GET /v1/rate_limit (docs/API.md: Rate limits): where a key stands, without
// spending any of its quota; 200 also when the quota is spent or the key
// banned; 401 without a key, as everywhere under /v1; on both
// configurations.
import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { STANDING_PER_MINUTE } from '../../src/limits/limit.js'
import { issueKey } from '../../src/keys/manage.js'
import { CONFIGURATIONS, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'

interface Status {
  plan: string
  limits: Array<{ window: string, limit: number, remaining: number, reset: number }>
  bannedUntil: number | null
}

for (const configuration of CONFIGURATIONS) {
  describe(`GET /v1/rate_limit (${configuration.name})`, () => {
    let t: TestApp
    beforeEach(async () => {
      t = await buildTestApp({ RATE_LIMIT_BAN_THRESHOLD: '2', RATE_LIMIT_BAN_SECONDS: '600' }, { backend: configuration.backend, limiterBackend: configuration.limiterBackend })
    })
    afterEach(async () => { await t.close() })

    const status = async (token: string): Promise<{ code: number, body: Status, remaining: string | undefined }> => {
      const response = await t.app.inject({ url: '/v1/rate_limit', headers: bearer(token) })
      return { code: response.statusCode, body: response.json<Status>(), remaining: response.headers['x-ratelimit-remaining'] as string | undefined }
    }

    it('When a key asks, again and again, then it is told its plan, each window and no ban, and its remaining never moves', async () => {
      // Arrange
      const token = await t.newKey('free')
      await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

      // Act
      const first = await status(token)
      const second = await status(token)
      const listed = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })

      // Assert
      assert.equal(first.code, 200)
      assert.equal(first.body.plan, 'free')
      assert.deepEqual(first.body.limits.map(({ window, limit, remaining }) => [window, limit, remaining]), [['minute', 60, 59], ['day', 1000, 999]])
      assert.equal(first.body.bannedUntil, null)
      for (const { reset } of first.body.limits) assert.ok(Number.isInteger(reset) && reset * 1000 > t.clock.now() - 5_000, `reset ${reset} is Unix seconds ahead`)
      assert.equal(first.remaining, '59', 'the headers say the same as the body')
      const standing = ({ limits }: Status): unknown[] => limits.map(({ window, limit, remaining }) => [window, limit, remaining])
      assert.deepEqual(standing(second.body), standing(first.body), 'asking spent nothing')
      // With Redis, a reset is Redis's time left counted on this instance's
      // clock (src/limits/redis-store.ts, decisionOf); the test's clock stands
      // still while Redis's runs, so two asks may fall either side of a second.
      second.body.limits.forEach(({ reset }, i) => assert.ok(Math.abs(reset - (first.body.limits[i]?.reset ?? 0)) <= 1, `reset ${reset} moved`))
      assert.equal(listed.headers['x-ratelimit-remaining'], '58', 'the two questions took nothing from the key')
    })

    it('When the key has spent its quota, then it still answers 200, with nothing remaining', async () => {
      // Arrange
      const key = await issueKey(t.storage, { plan: 'enterprise', name: 'small', perMinute: 10, perDay: 2, environment: t.config.environment, now: t.clock.now() })
      for (let i = 0; i < 3; i++) await t.app.inject({ url: '/v1/pets', headers: bearer(key.token) })

      // Act
      const spent = await status(key.token)

      // Assert
      assert.equal(spent.code, 200)
      assert.deepEqual(spent.body.limits.map(({ window, remaining }) => [window, remaining]), [['minute', 8], ['day', 0]])
      assert.equal(spent.body.bannedUntil, null, 'one refusal is no ban')
      assert.equal(spent.remaining, '0')
    })

    it('When the key is banned, then it still answers 200, and says until when', async () => {
      // Arrange: two refusals in a minute ban it (RATE_LIMIT_BAN_THRESHOLD=2).
      const key = await issueKey(t.storage, { plan: 'enterprise', name: 'banned', perMinute: 1, perDay: 100, environment: t.config.environment, now: t.clock.now() })
      const answers = []
      for (let i = 0; i < 4; i++) answers.push((await t.app.inject({ url: '/v1/pets', headers: bearer(key.token) })).statusCode)
      assert.deepEqual(answers, [200, 429, 429, 429])

      // Act
      const banned = await status(key.token)

      // Assert
      assert.equal(banned.code, 200)
      assert.ok(banned.body.bannedUntil !== null, 'the ban is told')
      const left = banned.body.bannedUntil * 1000 - t.clock.now()
      assert.ok(left > 500_000 && left <= 601_000, `the ban ends in ${left} ms, about RATE_LIMIT_BAN_SECONDS`)
      assert.equal(banned.remaining, '0')
    })

    it('When no key, or an unknown one, is sent, then 401, as everywhere under /v1', async () => {
      const none = await t.app.inject({ url: '/v1/rate_limit' })
      const unknown = await t.app.inject({ url: '/v1/rate_limit', headers: bearer('pet_live_not-a-key') })
      assert.equal(none.statusCode, 401)
      assert.equal(errorOf(none).code, 'missing_api_key')
      assert.equal(unknown.statusCode, 401)
      assert.equal(errorOf(unknown).code, 'invalid_api_key')
    })

    it('When a key of either scope asks, then it is answered: no scope is needed', async () => {
      for (const scopes of [['pets:read'], ['pets:write']] as const) {
        const key = await issueKey(t.storage, { plan: 'pro', name: 'scoped', perMinute: undefined, perDay: undefined, scopes, environment: t.config.environment, now: t.clock.now() })
        assert.equal((await status(key.token)).code, 200, scopes.join())
      }
    })
  })
}

describe('GET /v1/rate_limit has a cap of its own', () => {
  let t: TestApp
  beforeEach(async () => { t = await buildTestApp() })
  afterEach(async () => { await t.close() })

  it(`When one key asks more than ${STANDING_PER_MINUTE} times in a minute, then it gets 429, and its quota is untouched`, async () => {
    // Arrange
    const token = await t.newKey('pro')
    for (let i = 0; i < STANDING_PER_MINUTE; i++) {
      const response = await t.app.inject({ url: '/v1/rate_limit', headers: bearer(token) })
      assert.equal(response.statusCode, 200, `question ${i + 1}`)
    }

    // Act
    const capped = await t.app.inject({ url: '/v1/rate_limit', headers: bearer(token) })
    const listed = await t.app.inject({ url: '/v1/pets', headers: bearer(token) })
    t.clock.advance(60_000)
    const later = await t.app.inject({ url: '/v1/rate_limit', headers: bearer(token) })

    // Assert
    assert.equal(capped.statusCode, 429)
    assert.equal(errorOf(capped).code, 'rate_limited')
    assert.ok(Number(capped.headers['retry-after']) >= 1)
    assert.equal(listed.statusCode, 200)
    assert.equal(listed.headers['x-ratelimit-remaining'], '299', 'the questions and their cap took nothing from the key')
    assert.equal(later.statusCode, 200, 'the cap is per minute')
  })
})
