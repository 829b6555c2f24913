import { afterEach, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CONFIGURATIONS, buildTestApp, errorOf, type TestApp } from '../support/app.js'
import { CLOCK_START, bearer } from '../support/fixtures.js'
import { awayFromMinuteEdge } from '../support/redis.js'

/** Every rate-limit header a response may carry: the de facto X-RateLimit-* and the IETF draft's. */
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']

// Limits and bans, on each configuration: one instance on its own, and scaled out.
for (const configuration of CONFIGURATIONS) {
  describe(`rate limits (${configuration.name})`, () => {
    // The in-process store follows the test's clock, so the tests that move it
    // across windows and bans, or read instants on it, run there. The Redis
    // store decides on Redis's clock, as in service: its windows and bans are
    // tested at the store (test/limits/redis-store.test.ts), and here each
    // test starts far enough from a minute's end that its requests share one.
    const onTestClock = configuration.limiterBackend === 'memory' ? it : undefined
    let t: TestApp
    beforeEach(async () => {
      t = await buildTestApp({ RATE_LIMIT_BAN_THRESHOLD: '5', RATE_LIMIT_BAN_SECONDS: '900' }, configuration)
      t.clock.ms = CLOCK_START
      if (configuration.limiterBackend === 'redis') await awayFromMinuteEdge(10_000)
    })
    afterEach(async () => { await t.close() })

    const list = (token: string) => t.app.inject({ url: '/v1/pets', headers: bearer(token) })
    const minuteEnd = Date.parse('2027-03-10T12:01:00Z') / 1000
    const dayEnd = Date.parse('2027-03-11T00:00:00Z') / 1000

    onTestClock?.('When a free key sends 60 requests in a minute, then all pass and the 61st gets 429 with Retry-After to the minute end', async () => {
      const token = await t.newKey('free')
      for (let i = 1; i <= 60; i++) {
        const response = await list(token)
        assert.equal(response.statusCode, 200)
        assert.equal(response.headers['x-ratelimit-limit'], '60')
        assert.equal(response.headers['x-ratelimit-remaining'], String(60 - i))
        assert.equal(response.headers['x-ratelimit-reset'], String(minuteEnd))
      }
      const refused = await list(token)

      assert.equal(refused.statusCode, 429)
      assert.equal(errorOf(refused).code, 'rate_limited')
      assert.equal(refused.headers['retry-after'], '30')
      assert.equal(refused.headers['x-ratelimit-remaining'], '0')
      assert.equal(refused.headers['x-ratelimit-reset'], String(minuteEnd))
    })

    const PLAN_LIMITS = [['free', 60, 1_000], ['pro', 300, 10_000], ['business', 1_000, 100_000]] as const
    for (const [plan, perMinute, perDay] of PLAN_LIMITS) {
      it(`When a ${plan} key is used, then it is limited to ${perMinute} a minute and ${perDay} a day`, async () => {
        // Arrange
        const token = await t.newKey(plan)

        // Act
        const response = await list(token)

        // Assert
        assert.equal(response.statusCode, 200)
        assert.equal(response.headers['x-ratelimit-limit'], String(perMinute))
        assert.equal(response.headers['ratelimit-policy'], `"minute";q=${perMinute};w=60, "day";q=${perDay};w=86400`)
      })
    }

    it('When a key of a plan is made with its own per-minute or per-day limit, then that limit replaces the plan\'s', async () => {
      // Arrange
      const both = await t.newKey('pro', { perMinute: 7, perDay: 70 })
      const dayOnly = await t.newKey('free', { perDay: 500 })
      const minuteOnly = await t.newKey('business', { perMinute: 2_000 })

      // Act
      const responses = [await list(both), await list(dayOnly), await list(minuteOnly)]

      // Assert
      assert.deepEqual(responses.map((r) => r.headers['ratelimit-policy']), [
        '"minute";q=7;w=60, "day";q=70;w=86400',
        '"minute";q=60;w=60, "day";q=500;w=86400',
        '"minute";q=2000;w=60, "day";q=100000;w=86400'
      ])
      assert.equal(responses[0]?.headers['x-ratelimit-limit'], '7')
    })

    onTestClock?.('When the next UTC minute starts, then the key has room again', async () => {
      const token = await t.newKey('free')
      for (let i = 0; i < 60; i++) await list(token)
      t.clock.set('2027-03-10T12:01:00Z')

      const response = await list(token)
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['x-ratelimit-remaining'], '59')
    })

    onTestClock?.('When refused requests are sent, then they use no quota', async () => {
      const token = await t.newKey('enterprise', { perMinute: 2, perDay: 3 })
      await list(token)
      await list(token)
      for (let i = 0; i < 3; i++) assert.equal((await list(token)).statusCode, 429)
      t.clock.set('2027-03-10T12:01:00Z')

      const response = await list(token)
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['x-ratelimit-remaining'], '0', 'the day window had 3, two used before, one now')
    })

    onTestClock?.('When the daily quota is spent, then Retry-After points to the next UTC day, not the next minute', async () => {
      const token = await t.newKey('enterprise', { perMinute: 10, perDay: 3 })
      for (let i = 0; i < 3; i++) assert.equal((await list(token)).statusCode, 200)
      const refused = await list(token)

      assert.equal(refused.statusCode, 429)
      assert.equal(refused.headers['retry-after'], String(dayEnd - CLOCK_START / 1000))
      assert.equal(refused.headers['x-ratelimit-reset'], String(dayEnd))
      assert.equal(refused.headers['x-ratelimit-limit'], '3')
    })

    onTestClock?.('When the day window has fewer requests left than the minute, then the headers describe the day', async () => {
      const token = await t.newKey('enterprise', { perMinute: 100, perDay: 5 })
      const response = await list(token)

      assert.equal(response.headers['x-ratelimit-limit'], '5')
      assert.equal(response.headers['x-ratelimit-remaining'], '4')
      assert.equal(response.headers['x-ratelimit-reset'], String(dayEnd))
      assert.match(String(response.headers['ratelimit-policy']), /"minute";q=100;w=60, "day";q=5;w=86400/)
    })

    onTestClock?.('When both windows have as many requests left, then the headers describe the one that resets later (the day)', async () => {
      // Arrange: one request in the first minute, so that in the next one both windows have 9 left.
      const token = await t.newKey('enterprise', { perMinute: 10, perDay: 11 })
      await list(token)
      t.clock.set('2027-03-10T12:01:00Z')

      // Act
      const response = await list(token)

      // Assert
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers.ratelimit, '"minute";r=9;t=60, "day";r=9;t=43140', 'both windows have 9 left')
      assert.equal(response.headers['x-ratelimit-limit'], '11')
      assert.equal(response.headers['x-ratelimit-remaining'], '9')
      assert.equal(response.headers['x-ratelimit-reset'], String(dayEnd))
    })

    onTestClock?.('When both windows are full, then Retry-After runs until the later reset (the next UTC day)', async () => {
      // Arrange
      const token = await t.newKey('enterprise', { perMinute: 2, perDay: 2 })
      for (let i = 0; i < 2; i++) assert.equal((await list(token)).statusCode, 200)

      // Act
      const refused = await list(token)

      // Assert
      assert.equal(refused.statusCode, 429)
      assert.equal(errorOf(refused).code, 'rate_limited')
      assert.equal(refused.headers.ratelimit, '"minute";r=0;t=30, "day";r=0;t=43170', 'both windows are full')
      assert.equal(refused.headers['retry-after'], String(dayEnd - CLOCK_START / 1000))
    })

    onTestClock?.('When a key keeps sending after 429, then at the threshold it is banned, from its next request on', async () => {
      const token = await t.newKey('enterprise', { perMinute: 1, perDay: 1000 })
      await list(token)
      for (let i = 0; i < 5; i++) {
        const refused = await list(token)
        assert.equal(errorOf(refused).code, 'rate_limited')
      }
      const banned = await list(token)
      const banEnd = CLOCK_START / 1000 + 900

      assert.equal(banned.statusCode, 429)
      assert.equal(errorOf(banned).code, 'api_key_banned')
      assert.equal(banned.headers['retry-after'], '900')
      assert.equal(banned.headers['x-ratelimit-remaining'], '0')
      assert.equal(banned.headers['x-ratelimit-reset'], String(banEnd))
      // The draft's headers describe the ban as itself; the day window keeps its real count.
      assert.equal(banned.headers['ratelimit-policy'], '"minute";q=1;w=60, "day";q=1000;w=86400, "ban";q=0;w=900')
      assert.equal(banned.headers.ratelimit, '"minute";r=0;t=30, "day";r=999;t=43170, "ban";r=0;t=900')
    })

    onTestClock?.('When a ban is running, then it holds across windows and ends at its time', async () => {
      const token = await t.newKey('enterprise', { perMinute: 1, perDay: 1000 })
      await list(token)
      for (let i = 0; i < 5; i++) await list(token)
      t.clock.advance(5 * 60_000)
      const stillBanned = await list(token)
      t.clock.set('2027-03-10T12:15:30Z')
      const free = await list(token)

      assert.equal(errorOf(stillBanned).code, 'api_key_banned')
      assert.equal(stillBanned.headers['retry-after'], String(600))
      assert.equal(free.statusCode, 200)
    })

    onTestClock?.('When a key is banned, then its banned requests use no quota: after the ban its windows count what they did before', async () => {
      // Arrange: one admitted request, then refusals up to the threshold: banned from the next request on.
      const token = await t.newKey('enterprise', { perMinute: 1, perDay: 1000 })
      assert.equal((await list(token)).statusCode, 200)
      for (let i = 0; i < 5; i++) await list(token)
      for (let i = 0; i < 20; i++) assert.equal(errorOf(await list(token)).code, 'api_key_banned')

      // Act: the first request after the ban's end, in a new minute of the same day.
      t.clock.set('2027-03-10T12:15:30Z')
      const after = await list(token)

      // Assert: the day window holds the one request before the ban and this one.
      assert.equal(after.statusCode, 200)
      assert.match(String(after.headers.ratelimit), /^"minute";r=0;t=30, "day";r=998;t=\d+$/)
    })

    onTestClock?.('When refusals are spread over two minutes below the threshold in each, then there is no ban', async () => {
      const token = await t.newKey('enterprise', { perMinute: 1, perDay: 1000 })
      await list(token)
      for (let i = 0; i < 4; i++) await list(token)
      t.clock.set('2027-03-10T12:01:00Z')
      await list(token)
      for (let i = 0; i < 4; i++) assert.equal(errorOf(await list(token)).code, 'rate_limited')
    })

    it('When requests have no key, then they are limited per address at 60 a minute, with headers on the 401s', async () => {
      let last = await t.app.inject({ url: '/v1/pets', remoteAddress: '203.0.113.9' })
      assert.equal(last.statusCode, 401)
      assert.equal(last.headers['x-ratelimit-limit'], '60')
      assert.equal(last.headers['x-ratelimit-remaining'], '59')
      for (let i = 0; i < 59; i++) last = await t.app.inject({ url: '/v1/pets', remoteAddress: '203.0.113.9' })
      assert.equal(last.statusCode, 401)
      const refused = await t.app.inject({ url: '/v1/pets', remoteAddress: '203.0.113.9' })
      const otherAddress = await t.app.inject({ url: '/v1/pets', remoteAddress: '203.0.113.10' })

      assert.equal(refused.statusCode, 429)
      assert.equal(errorOf(refused).code, 'rate_limited')
      assert.equal(otherAddress.statusCode, 401)
    })

    it('When IPv6 clients share a /64, then they share one limit', async () => {
      for (let i = 0; i < 60; i++) await t.app.inject({ url: '/v1/pets', remoteAddress: `2001:db8:1:2::${i.toString(16)}` })
      const sameNetwork = await t.app.inject({ url: '/v1/pets', remoteAddress: '2001:db8:1:2:ffff::1' })
      const otherNetwork = await t.app.inject({ url: '/v1/pets', remoteAddress: '2001:db8:1:3::1' })

      assert.equal(sameNetwork.statusCode, 429)
      assert.equal(otherNetwork.statusCode, 401)
    })

    it('When X-Forwarded-For is sent and TRUST_PROXY is unset, then it is ignored', async () => {
      for (let i = 0; i < 60; i++) {
        await t.app.inject({ url: '/v1/pets', remoteAddress: '198.51.100.1', headers: { 'x-forwarded-for': `192.0.2.${i}` } })
      }
      const response = await t.app.inject({ url: '/v1/pets', remoteAddress: '198.51.100.1', headers: { 'x-forwarded-for': '192.0.2.200' } })
      assert.equal(response.statusCode, 429)
    })

    const unlimited = ['/v1/openapi.json', '/v1/docs/', '/healthz', '/readyz']

    it('When the OpenAPI document, the docs page or the health checks are fetched, then they carry none of the rate-limit headers', async () => {
      for (const url of unlimited) {
        const response = await t.app.inject({ url })
        assert.equal(response.statusCode, 200, url)
        for (const name of RATE_LIMIT_HEADERS) assert.equal(response.headers[name], undefined, `${url} carries ${name}`)
      }
    })

    it('When one address fetches the OpenAPI document, the docs page and the health checks 61 times each, then all pass and its /v1 limit is untouched', async () => {
      // Arrange
      const address = '203.0.113.77'

      // Act
      const statuses = new Map<string, number[]>()
      for (const url of unlimited) {
        for (let i = 0; i < 61; i++) {
          const response = await t.app.inject({ url, remoteAddress: address })
          statuses.set(url, [...statuses.get(url) ?? [], response.statusCode])
        }
      }
      const anonymous = await t.app.inject({ url: '/v1/pets', remoteAddress: address })

      // Assert
      for (const url of unlimited) assert.deepEqual(new Set(statuses.get(url)), new Set([200]), url)
      assert.equal(anonymous.statusCode, 401)
      assert.equal(anonymous.headers['x-ratelimit-limit'], '60')
      assert.equal(anonymous.headers['x-ratelimit-remaining'], '59')
    })

    it('When errors are answered under /v1, then every one carries the rate-limit headers', async () => {
      const token = await t.newKey('pro')
      const responses = [
        await t.app.inject({ url: '/v1/nothing-here', headers: bearer(token) }),
        await t.app.inject({ method: 'DELETE', url: '/v1/pets', headers: bearer(token) }),
        await t.app.inject({ url: '/v1/pets?limit=0', headers: bearer(token) }),
        await t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'text/plain' }, payload: 'x' }),
        await t.app.inject({ url: '/v1/pets', headers: bearer('pet_live_nope') })
      ]
      assert.deepEqual(responses.map((r) => r.statusCode), [404, 405, 400, 415, 401])
      for (const response of responses) {
        assert.ok(response.headers['x-ratelimit-limit'], `${response.statusCode} has X-RateLimit-Limit`)
        assert.ok(response.headers['x-ratelimit-remaining'], `${response.statusCode} has X-RateLimit-Remaining`)
        assert.ok(response.headers['x-ratelimit-reset'], `${response.statusCode} has X-RateLimit-Reset`)
      }
    })
  })

  describe(`rate limits behind a proxy (${configuration.name})`, () => {
    it('When X-Forwarded-For holds something that is not an address, then all such requests share one limit', async () => {
      const t = await buildTestApp({ TRUST_PROXY: 'true' }, configuration)
      try {
        for (let i = 0; i < 60; i++) {
          await t.app.inject({ url: '/v1/pets', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': `spoof${i}` } })
        }
        const response = await t.app.inject({ url: '/v1/pets', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': 'spoof-new' } })
        assert.equal(response.statusCode, 429)
      } finally {
        await t.close()
      }
    })

    it('When TRUST_PROXY is set, then the client address comes from X-Forwarded-For', async () => {
      const t = await buildTestApp({ TRUST_PROXY: '1' }, configuration)
      try {
        for (let i = 0; i < 60; i++) {
          await t.app.inject({ url: '/v1/pets', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '192.0.2.7' } })
        }
        const sameClient = await t.app.inject({ url: '/v1/pets', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '192.0.2.7' } })
        const otherClient = await t.app.inject({ url: '/v1/pets', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '192.0.2.8' } })
        assert.equal(sameClient.statusCode, 429)
        assert.equal(otherClient.statusCode, 401)
      } finally {
        await t.close()
      }
    })
  })
}
