// Brownouts (docs/API.md: The deprecated operation): inside one of
// DEPRECATION_BROWNOUTS the deprecated operation answers as after its sunset,
// with Retry-After until the brownout ends; nothing else changes.
import { after, afterEach, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPet, buildPetRecord, CLOCK_START } from '../support/fixtures.js'

/** CLOCK_START is 2027-03-10T12:00:30Z: the first brownout is under way then, 29 min 30 s before its end. */
const BROWNOUTS = '2027-03-10T12:00:00Z/2027-03-10T12:30:00Z, 2027-03-11T12:00:00Z/2027-03-11T13:00:00Z'

for (const configuration of CONFIGURATIONS) {
  describe(`brownouts of the deprecated operation (${configuration.name})`, () => {
    let t: TestApp
    let token: string
    let petId: string
    before(async () => {
      t = await buildTestApp({ PUBLIC_BASE_URL: 'https://api.example.test/v1', DEPRECATION_BROWNOUTS: BROWNOUTS }, configuration)
      token = await t.newKey('pro')
      petId = String((await t.storage.createPet(buildPetRecord({ name: 'Old', categoryId: 2n, status: 'sold' }))).id)
    })
    after(async () => { await t.close() })
    afterEach(() => { t.clock.ms = CLOCK_START })

    const get = async (url: string, headers = bearer(token)) => await t.app.inject({ url, headers })

    it('When getPet is called inside a brownout, then 410 gone names the brownout and its end, with Retry-After until then and every deprecation and rate-limit header', async () => {
      const response = await get(`/v1/pets/${petId}`)

      assert.equal(response.statusCode, 410)
      const error = errorOf(response)
      assert.equal(error.code, 'gone')
      assert.match(error.message, /brownout \(2027-03-10T12:00:00Z\/2027-03-10T12:30:00Z\), until 2027-03-10T12:30:00\.000Z/)
      assert.match(error.message, /use GET \/pets instead/)
      assert.equal(response.headers['retry-after'], String(29 * 60 + 30))
      assert.equal(response.headers.deprecation, '@1795132800')
      assert.equal(response.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
      assert.match(String(response.headers.link), /<https:\/\/api\.example\.test\/v1\/pets>; rel="successor-version"/)
      assert.ok(response.headers['x-ratelimit-remaining'] !== undefined)
      assert.ok(response.headers.ratelimit !== undefined)
    })

    it('When an animal that does not exist is asked for inside a brownout, then it is 410 too, as after the sunset', async () => {
      const response = await get('/v1/pets/999999')
      assert.equal(response.statusCode, 410)
      assert.equal(errorOf(response).code, 'gone')
    })

    it('When the other operations are called inside a brownout, then they answer as ever', async () => {
      const list = await get('/v1/pets?limit=1')
      const create = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload: JSON.stringify(buildPet()) })
      const limits = await get('/v1/rate_limit')

      assert.equal(list.statusCode, 200)
      assert.equal(create.statusCode, 201)
      assert.equal(limits.statusCode, 200)
      for (const response of [list, create, limits]) {
        assert.equal(response.headers.deprecation, undefined)
        assert.equal(response.headers['retry-after'], undefined)
      }
    })

    it('When getPet is refused before it is reached inside a brownout, then the refusal is the same as outside one (401, 400)', async () => {
      const noKey = await get(`/v1/pets/${petId}`, {})
      const badId = await get('/v1/pets/abc')

      assert.equal(noKey.statusCode, 401)
      assert.equal(errorOf(noKey).code, 'missing_api_key')
      assert.equal(badId.statusCode, 400)
      assert.equal(errorOf(badId).code, 'invalid_request')
    })

    it('When a brownout has ended, or the next has not begun, then getPet answers as before (200, 404) with no Retry-After', async () => {
      t.clock.set('2027-03-10T12:30:00Z')
      const atEnd = await get(`/v1/pets/${petId}`)
      t.clock.set('2027-03-11T11:59:59.999Z')
      const ahead = await get('/v1/pets/999999')
      t.clock.set('2027-03-11T12:59:59Z')
      const second = await get(`/v1/pets/${petId}`)

      assert.equal(atEnd.statusCode, 200)
      assert.equal(atEnd.headers['retry-after'], undefined)
      assert.equal(atEnd.headers.deprecation, '@1795132800')
      assert.equal(ahead.statusCode, 404)
      assert.equal(second.statusCode, 410)
      assert.equal(second.headers['retry-after'], '1')
    })

    it('When the sunset has passed, then 410 says the operation was removed, without Retry-After', async () => {
      t.clock.set('2030-12-05T00:00:00Z')
      const response = await get(`/v1/pets/${petId}`)

      assert.equal(response.statusCode, 410)
      assert.match(errorOf(response).message, /was removed on Thu, 05 Dec 2030/)
      assert.equal(response.headers['retry-after'], undefined)
    })
  })
}
