import { after, afterEach, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { CONFIGURATIONS, buildTestApp, errorOf, jsonHeaders, type TestApp } from '../support/app.js'
import { bearer, buildPet, buildPetRecord, CLOCK_START, INT64_MAX } from '../support/fixtures.js'
import type { Storage } from '../../src/db/storage.js'
import { MAX_PAGE_SIZE } from '../../src/domain.js'

/** Every animal stored, page after page: a count that no number of animals saturates. */
async function countPets (storage: Storage): Promise<number> {
  let total = 0
  let afterId = 0n
  for (;;) {
    const page = await storage.listPets({ afterId, status: undefined, limit: MAX_PAGE_SIZE })
    total += page.length
    const last = page.at(-1)
    if (page.length < MAX_PAGE_SIZE || last === undefined) return total
    afterId = last.id
  }
}

// Every operation, on each configuration: one instance on its own, and scaled out.
for (const configuration of CONFIGURATIONS) {
  describe(`POST /v1/pets (${configuration.name})`, () => {
    let t: TestApp
    let token: string
    before(async () => {
      t = await buildTestApp({}, configuration)
      token = await t.newKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
    })
    after(async () => { await t.close() })

    const post = (body: unknown, headers: Record<string, string> = {}) => t.app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: jsonHeaders(token, headers),
      payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
    })

    it('When a valid animal is sent, then it is stored and returned with an id and 201', async () => {
      const response = await post(buildPet({ name: 'Rex', categoryId: 3, status: 'pending' }))

      assert.equal(response.statusCode, 201)
      const pet = response.json()
      assert.equal(typeof pet.id, 'number')
      assert.deepEqual({ ...pet, id: undefined }, { id: undefined, name: 'Rex', categoryId: 3, status: 'pending' })
      const stored = await t.storage.getPet(BigInt(pet.id))
      assert.equal(stored?.name, 'Rex')
    })

    it('When status is omitted, then the animal is available', async () => {
      const response = await post({ name: 'Tom', categoryId: 1 })

      assert.equal(response.statusCode, 201)
      assert.equal(response.json().status, 'available')
    })

    it('When categoryId is the largest int64, then it round-trips byte for byte', async () => {
      const response = await post(`{"name":"Big","categoryId":${INT64_MAX}}`)

      assert.equal(response.statusCode, 201)
      assert.match(response.body, new RegExp(`"categoryId":${INT64_MAX}[,}]`))
      const id = /"id":(\d+)/.exec(response.body)?.[1]
      const fetched = await t.app.inject({ url: `/v1/pets/${id}`, headers: bearer(token) })
      assert.match(fetched.body, new RegExp(`"categoryId":${INT64_MAX}[,}]`))
    })

    it('When the name has emoji, accents and inner spaces, then it is stored exactly as sent', async () => {
      const name = '  Ré 🐕‍🦺 x  '
      const response = await post({ name, categoryId: 1 })

      assert.equal(response.statusCode, 201)
      assert.equal(response.json().name, name)
    })

    it('When the name is 100 astral characters, then it is accepted (length counts code points)', async () => {
      const response = await post({ name: '🐈'.repeat(100), categoryId: 1 })
      assert.equal(response.statusCode, 201)
    })

    const invalid: Array<[string, string, string]> = [
      ['categoryId is a string', '{"name":"a","categoryId":"1"}', 'body.categoryId'],
      ['categoryId is a fraction', '{"name":"a","categoryId":1.5}', 'body.categoryId'],
      ['categoryId is zero', '{"name":"a","categoryId":0}', 'body.categoryId'],
      ['categoryId is negative', '{"name":"a","categoryId":-4}', 'body.categoryId'],
      ['categoryId exceeds int64', '{"name":"a","categoryId":9223372036854775808}', 'body.categoryId'],
      ['categoryId is 1e30', '{"name":"a","categoryId":1e30}', 'body.categoryId'],
      ['categoryId is 9.3e18 (past int64, written with an exponent)', '{"name":"a","categoryId":9.3e18}', 'body.categoryId'],
      ['categoryId is null', '{"name":"a","categoryId":null}', 'body.categoryId'],
      ['categoryId is missing', '{"name":"a"}', 'body.categoryId'],
      ['name is missing', '{"categoryId":1}', 'body.name'],
      ['name is empty', '{"name":"","categoryId":1}', 'body.name'],
      ['name is only white space', '{"name":" \\u3000\\t","categoryId":1}', 'body.name'],
      ['name has a control character', '{"name":"a\\u0007b","categoryId":1}', 'body.name'],
      ['name is 101 characters', JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 }), 'body.name'],
      ['name is a number', '{"name":5,"categoryId":1}', 'body.name'],
      ['name has a lone surrogate', '{"name":"a\\ud800b","categoryId":1}', 'body.name'],
      ['status is unknown', '{"name":"a","categoryId":1,"status":"lost"}', 'body.status'],
      ['an unknown field is sent', '{"name":"a","categoryId":1,"color":"red"}', 'body.color'],
      ['an id is sent', '{"id":7,"name":"a","categoryId":1}', 'body.id'],
      ['the body is an array', '[{"name":"a","categoryId":1}]', 'body']
    ]
    for (const [when, body, field] of invalid) {
      it(`When ${when}, then 400 invalid_request names ${field}`, async () => {
        const response = await post(body)

        assert.equal(response.statusCode, 400)
        const error = errorOf(response)
        assert.equal(error.code, 'invalid_request')
        assert.equal(error.status, 400)
        assert.ok(error.details?.some((d) => d.field === field), `details: ${JSON.stringify(error.details)}`)
      })
    }

    for (const [when, body] of [
      ['the body is not JSON', '{"name":'],
      ['the body is empty', ''],
      ['the body has __proto__', '{"name":"a","categoryId":1,"__proto__":{"x":1}}'],
      ['the body has constructor', '{"name":"a","categoryId":1,"constructor":{"prototype":{}}}'],
      ['a key is duplicated with another value', '{"name":"a","name":"b","categoryId":1}']
    ]) {
      it(`When ${when}, then 400 invalid_json`, async () => {
        const response = await post(body as string)

        assert.equal(response.statusCode, 400)
        assert.equal(errorOf(response).code, 'invalid_json')
      })
    }

    it('When the body is over 16 KiB, then 413 payload_too_large', async () => {
      const response = await post(JSON.stringify({ name: 'a', categoryId: 1, pad: 'x'.repeat(17 * 1024) }))

      assert.equal(response.statusCode, 413)
      assert.equal(errorOf(response).code, 'payload_too_large')
      assert.ok(response.headers['x-ratelimit-limit'])
    })

    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', undefined]) {
      it(`When Content-Type is ${contentType ?? 'absent'}, then 415 unsupported_media_type`, async () => {
        const headers: Record<string, string> = bearer(token)
        if (contentType !== undefined) headers['content-type'] = contentType
        const response = await t.app.inject({ method: 'POST', url: '/v1/pets', headers, payload: '{"name":"a","categoryId":1}' })

        assert.equal(response.statusCode, 415)
        assert.equal(errorOf(response).code, 'unsupported_media_type')
      })
    }

    // Regression: "numbers silently rounded". The double nearest to
    // 0.99999999999999999 is 1, and the animal was stored with categoryId 1.
    it('Numbers silently rounded: when categoryId is 0.99999999999999999, then 400 names body.categoryId and nothing is stored', async () => {
      // Arrange
      const before = await countPets(t.storage)

      // Act
      const response = await post('{"name":"Almost","categoryId":0.99999999999999999}')

      // Assert
      assert.equal(response.statusCode, 400)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_request')
      assert.ok(error.details?.some((d) => d.field === 'body.categoryId'), `details: ${JSON.stringify(error.details)}`)
      assert.equal(await countPets(t.storage), before)
    })

    it('When categoryId is written 1.5e1 or 10e-1, then it is the integer it denotes exactly', async () => {
      const fifteen = await post('{"name":"Exp","categoryId":1.5e1}')
      const one = await post('{"name":"Exp","categoryId":10e-1}')

      assert.equal(fifteen.statusCode, 201)
      assert.equal(fifteen.json().categoryId, 15)
      assert.equal(one.statusCode, 201)
      assert.equal(one.json().categoryId, 1)
    })

    // Regression: "a gzip body is parsed as plain JSON". Content-Encoding was
    // ignored: a compressed body got a misleading 400, and one that claimed
    // gzip without being compressed was stored.
    for (const encoding of ['gzip', 'br', 'deflate', 'identity, gzip']) {
      it(`A gzip body is parsed as plain JSON: when Content-Encoding is ${encoding}, then 415 unsupported_media_type and nothing is stored`, async () => {
        // Arrange
        const before = await countPets(t.storage)
        const body = JSON.stringify(buildPet({ name: 'Zipped' }))

        // Act
        const compressed = await post(gzipSync(body), { 'content-encoding': encoding })
        const uncompressed = await post(body, { 'content-encoding': encoding })

        // Assert
        for (const response of [compressed, uncompressed]) {
          assert.equal(response.statusCode, 415)
          assert.equal(errorOf(response).code, 'unsupported_media_type')
          assert.match(errorOf(response).message, /Content-Encoding/)
        }
        assert.equal(await countPets(t.storage), before)
      })
    }

    it('When Content-Encoding is identity, then the body is accepted', async () => {
      const response = await post(buildPet({ name: 'Plain' }), { 'content-encoding': 'Identity' })

      assert.equal(response.statusCode, 201)
    })

    it('When the body is not valid UTF-8, then 400 invalid_json (nothing is replaced by U+FFFD)', async () => {
      const payload = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('","categoryId":1}')])
      const response = await t.app.inject({ method: 'POST', url: '/v1/pets', headers: jsonHeaders(token), payload })

      assert.equal(response.statusCode, 400)
      assert.equal(errorOf(response).code, 'invalid_json')
    })

    it('When the declared charset is not UTF-8, then 415', async () => {
      const response = await t.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json; charset=utf-16' }, payload: JSON.stringify(buildPet())
      })
      assert.equal(response.statusCode, 415)
      assert.equal(errorOf(response).code, 'unsupported_media_type')
    })

    it('When Content-Type has a charset, then the body is accepted', async () => {
      const response = await t.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...bearer(token), 'content-type': 'application/json; charset=utf-8' }, payload: JSON.stringify(buildPet())
      })
      assert.equal(response.statusCode, 201)
    })
  })

  describe(`POST /v1/pets with Idempotency-Key (${configuration.name})`, () => {
    let t: TestApp
    let token: string
    before(async () => {
      t = await buildTestApp({}, configuration)
      token = await t.newKey('pro')
    })
    after(async () => { await t.close() })
    // A test that moves the clock leaves it where the next one expects it.
    afterEach(() => { t.clock.ms = CLOCK_START })

    const post = (body: unknown, key: string, who = token) => t.app.inject({
      method: 'POST', url: '/v1/pets', headers: jsonHeaders(who, { 'idempotency-key': key }), payload: JSON.stringify(body)
    })
    const count = async () => await countPets(t.storage)

    it('When the same request is retried, then the first response comes back and nothing is added', async () => {
      const first = await post(buildPet({ name: 'Once' }), 'retry-1')
      const before = await count()
      const second = await post(buildPet({ name: 'Once' }), 'retry-1')

      assert.equal(first.statusCode, 201)
      assert.equal(second.statusCode, 201)
      assert.equal(second.headers['idempotent-replayed'], 'true')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      assert.deepEqual(second.json(), first.json())
      assert.equal(await count(), before)
    })

    it('When the key is sent in the quoted form, then it is the same key', async () => {
      const first = await post(buildPet({ name: 'Quoted' }), 'q-1')
      const second = await post(buildPet({ name: 'Quoted' }), '"q-1"')

      assert.equal(first.statusCode, 201)
      assert.equal(second.statusCode, 201)
      assert.equal(second.headers['idempotent-replayed'], 'true')
      assert.equal(second.json().id, first.json().id)
    })

    it('When the same key comes with another body, then 422 idempotency_key_reused', async () => {
      const first = await post(buildPet({ name: 'A' }), 'reuse-1')
      const response = await post(buildPet({ name: 'B' }), 'reuse-1')

      assert.equal(first.statusCode, 201)
      assert.equal(response.statusCode, 422)
      assert.equal(errorOf(response).code, 'idempotency_key_reused')
    })

    it('When two requests with one key arrive together, then one is added and the other gets 409', async () => {
      const [a, b] = await Promise.all([post(buildPet({ name: 'Twin' }), 'together'), post(buildPet({ name: 'Twin' }), 'together')])
      const statuses = [a.statusCode, b.statusCode].sort()

      assert.deepEqual(statuses, [201, 409])
      const conflict = a.statusCode === 409 ? a : b
      assert.equal(errorOf(conflict).code, 'idempotency_key_in_use')
    })

    it('When another API key uses the same Idempotency-Key, then it is a different request', async () => {
      const other = await t.newKey('pro')
      const mine = await post(buildPet({ name: 'Scoped' }), 'scoped')
      const theirs = await post(buildPet({ name: 'Scoped' }), 'scoped', other)

      assert.equal(mine.statusCode, 201)
      assert.equal(theirs.statusCode, 201)
      assert.equal(theirs.headers['idempotent-replayed'], undefined)
      assert.notEqual(theirs.json().id, mine.json().id)
    })

    it('When 24 hours have passed, then the key is forgotten and the animal is added again; 1 ms earlier it was still replayed', async () => {
      // Arrange
      const first = await post(buildPet({ name: 'Later' }), 'day-old')

      // Act
      t.clock.advance(24 * 60 * 60 * 1000 - 1)
      const lastMoment = await post(buildPet({ name: 'Later' }), 'day-old')
      t.clock.advance(2)
      const again = await post(buildPet({ name: 'Later' }), 'day-old')

      // Assert
      assert.equal(first.statusCode, 201)
      assert.equal(lastMoment.statusCode, 201)
      assert.equal(lastMoment.headers['idempotent-replayed'], 'true')
      assert.equal(lastMoment.json().id, first.json().id)
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], undefined)
      assert.notEqual(again.json().id, first.json().id)
    })

    it('When a request with a key fails validation and is retried with a valid body, then the retry is added (only a 201 is remembered)', async () => {
      // Arrange
      const refused = await post({ name: '', categoryId: 1 }, 'fix-and-retry')

      // Act
      const retried = await post(buildPet({ name: 'Fixed' }), 'fix-and-retry')
      const replayed = await post(buildPet({ name: 'Fixed' }), 'fix-and-retry')

      // Assert
      assert.equal(refused.statusCode, 400)
      assert.equal(errorOf(refused).code, 'invalid_request')
      assert.equal(retried.statusCode, 201)
      assert.equal(retried.headers['idempotent-replayed'], undefined)
      assert.equal(retried.json().name, 'Fixed')
      assert.equal(replayed.headers['idempotent-replayed'], 'true', 'the 201 itself is remembered')
      assert.equal(replayed.json().id, retried.json().id)
    })

    // Regression: "two Idempotency-Key headers are joined". Node joins them
    // with ", " into one key that neither request meant.
    it('Two Idempotency-Key headers are joined: when the header is sent twice, then 400 invalid_request names it and nothing is stored', async () => {
      // Arrange
      const before = await count()

      // Act
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...jsonHeaders(token), 'idempotency-key': ['twice-a', 'twice-b'] },
        payload: JSON.stringify(buildPet({ name: 'Twice' }))
      })

      // Assert
      assert.equal(response.statusCode, 400)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_request')
      assert.deepEqual(error.details, [{ field: 'header.idempotency-key', reason: 'must be sent once' }])
      assert.equal(await count(), before)
    })

    it('When one Idempotency-Key holds a comma, then it is one key', async () => {
      const first = await post(buildPet({ name: 'Comma' }), 'a, b')
      const second = await post(buildPet({ name: 'Comma' }), 'a, b')

      assert.equal(first.statusCode, 201)
      assert.equal(second.headers['idempotent-replayed'], 'true')
    })

    const badKeys: Array<[string, string]> = [['empty', ''], ['too long', 'k'.repeat(256)], ['not printable ASCII', 'clé'], ['an empty quoted string', '""']]
    for (const [when, key] of badKeys) {
      it(`When the key is ${when}, then 400`, async () => {
        const response = await t.app.inject({
          method: 'POST', url: '/v1/pets', headers: jsonHeaders(token, { 'idempotency-key': key }), payload: JSON.stringify(buildPet())
        })
        assert.equal(response.statusCode, 400)
        assert.equal(errorOf(response).code, 'invalid_request')
      })
    }
  })

  describe(`GET /v1/pets (${configuration.name})`, () => {
    let t: TestApp
    let token: string
    const statuses = ['available', 'pending', 'sold'] as const
    before(async () => {
      t = await buildTestApp({ PUBLIC_BASE_URL: 'https://api.example.test/v1' }, configuration)
      token = await t.newKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
      for (let i = 0; i < 45; i++) {
        await t.storage.createPet(buildPetRecord({ name: `pet ${i}`, categoryId: 1n, status: statuses[i % 3] as typeof statuses[number] }))
      }
    })
    after(async () => { await t.close() })

    const get = (url: string, headers: Record<string, string> = bearer(token)) => t.app.inject({ url, headers })

    it('When no limit is given, then 20 animals come back in id order with a next link', async () => {
      const response = await get('/v1/pets')

      assert.equal(response.statusCode, 200)
      const pets: Array<{ id: number }> = response.json()
      assert.equal(pets.length, 20)
      assert.deepEqual(pets.map((p) => p.id), [...pets.map((p) => p.id)].sort((a, b) => a - b))
      assert.match(String(response.headers.link), /^<https:\/\/api\.example\.test\/v1\/pets\?limit=20&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
    })

    it('When following next links, then every animal is seen once and the last page has no link', async () => {
      const seen: number[] = []
      let url: string | undefined = '/v1/pets?limit=7'
      let pages = 0
      while (url !== undefined && pages < 20) {
        const response = await get(url)
        assert.equal(response.statusCode, 200)
        seen.push(...response.json().map((p: { id: number }) => p.id))
        const link = /<https:\/\/api\.example\.test(\/v1\/pets\?[^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))
        url = link?.[1]
        pages++
      }
      assert.equal(seen.length, 45)
      assert.equal(new Set(seen).size, 45)
      assert.equal(pages, 7)
    })

    it('When filtering by status, then only those animals come back, and the next link keeps the filter', async () => {
      const response = await get('/v1/pets?status=sold&limit=5')

      const pets: Array<{ status: string }> = response.json()
      assert.equal(pets.length, 5)
      assert.ok(pets.every((p) => p.status === 'sold'))
      assert.match(String(response.headers.link), /status=sold/)
      const next = /<https:\/\/api\.example\.test(\/v1\/pets\?[^>]+)>/.exec(String(response.headers.link))?.[1] ?? ''
      const rest = await get(next)
      assert.equal(rest.json().length, 5)
      assert.ok(rest.json().every((p: { status: string }) => p.status === 'sold'))
      const last = /<https:\/\/api\.example\.test(\/v1\/pets\?[^>]+)>/.exec(String(rest.headers.link))?.[1] ?? ''
      const end = await get(last)
      assert.equal(end.json().length, 5)
      assert.equal(end.headers.link, undefined)
    })

    it('When the Host header is forged, then the next link still uses the configured address', async () => {
      const response = await get('/v1/pets?limit=1', { ...bearer(token), host: 'evil.example', 'x-forwarded-host': 'evil.example' })
      assert.match(String(response.headers.link), /^<https:\/\/api\.example\.test\/v1\/pets\?limit=1&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
      assert.doesNotMatch(String(response.headers.link), /evil/)
    })

    for (const query of ['limit=0', 'limit=101', 'limit=1.5', 'limit=abc', 'limit=', 'limit=%205', 'limit=1&limit=2', 'status=lost', 'status=', 'color=red', 'cursor=', 'cursor=bm90LWEtY3Vyc29y', 'cursor=%24%24']) {
      it(`When the query is ${query}, then 400 invalid_request`, async () => {
        const response = await get(`/v1/pets?${query}`)

        assert.equal(response.statusCode, 400)
        assert.equal(errorOf(response).code, 'invalid_request')
      })
    }

    /** The cursor of a page's `Link: rel="next"`; fails when there is none, so that no test goes on with an empty cursor. */
    const nextCursor = (response: { statusCode: number, headers: Record<string, unknown> }): string => {
      assert.equal(response.statusCode, 200)
      const cursor = /[?&]cursor=([A-Za-z0-9_-]+)/.exec(String(response.headers.link ?? ''))?.[1]
      assert.ok(cursor !== undefined, `no cursor in Link: ${String(response.headers.link)}`)
      return cursor
    }

    it('When a cursor made for one status is used with another, then 400 names query.cursor as made for another filter', async () => {
      // Arrange
      const cursor = nextCursor(await get('/v1/pets?status=sold&limit=2'))

      // Act
      const response = await get(`/v1/pets?status=pending&limit=2&cursor=${cursor}`)

      // Assert
      assert.equal(response.statusCode, 400)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_request')
      assert.deepEqual(error.details, [{ field: 'query.cursor', reason: 'was made for another status filter' }])
    })

    it('When a cursor is altered by one character, then 400 names query.cursor as not made here, and the unaltered one passes', async () => {
      // Arrange
      const cursor = nextCursor(await get('/v1/pets?limit=2'))
      const altered = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4)

      // Act
      const response = await get(`/v1/pets?limit=2&cursor=${altered}`)
      const unaltered = await get(`/v1/pets?limit=2&cursor=${cursor}`)

      // Assert
      assert.equal(response.statusCode, 400)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_request')
      assert.deepEqual(error.details, [{ field: 'query.cursor', reason: 'is not a cursor this service made' }])
      assert.equal(unaltered.statusCode, 200)
    })
  })

  describe(`GET /v1/pets/{petId} (deprecated) (${configuration.name})`, () => {
    let t: TestApp
    let token: string
    before(async () => {
      t = await buildTestApp({ PUBLIC_BASE_URL: 'https://api.example.test/v1' }, configuration)
      token = await t.newKey()
    })
    after(async () => { await t.close() })

    // The sunset test moves the clock to 2030; every other test expects 2027.
    afterEach(() => { t.clock.ms = CLOCK_START })

    const get = (id: string) => t.app.inject({ url: `/v1/pets/${id}`, headers: bearer(token) })

    function assertDeprecationHeaders (headers: Record<string, unknown>): void {
      assert.equal(headers.deprecation, '@1795132800')
      assert.equal(headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
      assert.match(String(headers.link), /<https:\/\/api\.example\.test\/v1\/pets>; rel="successor-version"/)
      assert.match(String(headers.link), /<https:\/\/api\.example\.test\/v1\/docs>; rel="deprecation"/)
    }

    it('When the animal exists, then it comes back with the deprecation headers', async () => {
      const pet = await t.storage.createPet(buildPetRecord({ name: 'Old', categoryId: 2n, status: 'sold' }))
      const response = await get(String(pet.id))

      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json(), { id: Number(pet.id), name: 'Old', categoryId: 2, status: 'sold' })
      assertDeprecationHeaders(response.headers)
    })

    it('When the animal does not exist, then 404 not_found, still with the deprecation headers', async () => {
      const response = await get('999999')

      assert.equal(response.statusCode, 404)
      assert.equal(errorOf(response).code, 'not_found')
      assertDeprecationHeaders(response.headers)
    })

    it('When the id is the largest int64, then it is looked up exactly (404, not a rounding)', async () => {
      const response = await get(String(INT64_MAX))
      assert.equal(response.statusCode, 404)
      assert.match(errorOf(response).message, new RegExp(String(INT64_MAX)))
    })

    it('When the id has leading zeros, then it is the same id', async () => {
      const pet = await t.storage.createPet(buildPetRecord({ name: 'Zero', categoryId: 1n, status: 'available' }))
      const response = await get(`000${pet.id}`)
      assert.equal(response.statusCode, 200)
      assert.equal(response.json().name, 'Zero')
    })

    it('When there is no API key, then 401 still carries the deprecation headers', async () => {
      const response = await t.app.inject({ url: '/v1/pets/1' })
      assert.equal(response.statusCode, 401)
      assertDeprecationHeaders(response.headers)
    })

    for (const id of ['abc', '0', '-1', '1.5', '9223372036854775808', '01x', ' 1', '+1', '0x1', '1e2']) {
      it(`When the id is ${id}, then 400 invalid_request`, async () => {
        const response = await get(id)
        assert.equal(response.statusCode, 400)
        assert.equal(errorOf(response).code, 'invalid_request')
      })
    }

    it('When the sunset instant has come, then 410 gone', async () => {
      const pet = await t.storage.createPet(buildPetRecord({ name: 'Late', categoryId: 1n, status: 'available' }))
      t.clock.set('2030-12-04T23:59:59.999Z')
      const before = await get(String(pet.id))
      t.clock.set('2030-12-05T00:00:00Z')
      const at = await get(String(pet.id))

      assert.equal(before.statusCode, 200)
      assert.equal(at.statusCode, 410)
      assert.equal(errorOf(at).code, 'gone')
      assertDeprecationHeaders(at.headers)
    })
  })
}
