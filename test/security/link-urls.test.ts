// Every absolute URL the service writes comes from its own environment's
// address, PUBLIC_BASE_URL or STAGING_BASE_URL, never from the request
// (docs/CONFIGURATION.md): not from Host, not from an absolute-form
// request line (RFC 9112 §3.2.2, which a server must accept), not from
// X-Forwarded-* or Forwarded, even with TRUST_PROXY=true, where Fastify
// believes them. Real servers and raw sockets: no HTTP client sends these
// requests.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createKey, idsIn, linkTarget, makeTempDir, rawRequest, removeTempDir, sqliteUrl, startServer, type RawResponse, type ServerProcess } from '../support/process.js'
import { newPetJson } from '../support/fixtures.js'

const PRODUCTION = 'https://api.example.com/v1'
const STAGING = 'https://staging.example.com/v1'

/** Request lines and headers an attacker may choose: each is sent with a path of the API in place of PATH. */
const FORGERIES: Array<{ name: string, line: (path: string) => string, headers: string[] }> = [
  { name: 'a forged Host', line: (path) => `GET ${path} HTTP/1.1`, headers: ['Host: evil.example'] },
  { name: 'a Host with credentials', line: (path) => `GET ${path} HTTP/1.1`, headers: ['Host: api.example.com@evil.example'] },
  { name: 'an absolute-form request line', line: (path) => `GET http://evil.example${path} HTTP/1.1`, headers: ['Host: evil.example'] },
  { name: 'an https absolute-form request line with a port', line: (path) => `GET https://evil.example:8443${path} HTTP/1.1`, headers: ['Host: evil.example:8443'] },
  {
    name: 'forwarded headers',
    line: (path) => `GET ${path} HTTP/1.1`,
    headers: [
      'Host: evil.example', 'X-Forwarded-Host: evil.example', 'X-Forwarded-Proto: http', 'X-Forwarded-Port: 8080',
      'X-Forwarded-Prefix: /evil', 'Forwarded: for=192.0.2.1;host=evil.example;proto=http', 'X-Original-URL: /evil', 'X-Rewrite-URL: /evil'
    ]
  },
  {
    name: 'an absolute-form request line with forwarded headers',
    line: (path) => `GET http://evil.example:81${path} HTTP/1.1`,
    headers: ['Host: evil.example', 'X-Forwarded-Host: evil2.example', 'X-Forwarded-Proto: http', 'Forwarded: host=evil3.example;proto=http']
  }
]

async function send (server: ServerProcess, token: string, forgery: typeof FORGERIES[number], path: string): Promise<RawResponse> {
  return await rawRequest(server.port, [forgery.line(path), ...forgery.headers, `Authorization: Bearer ${token}`, 'Connection: close', '', ''].join('\r\n'))
}

for (const environment of ['production', 'staging'] as const) {
  const base = environment === 'production' ? PRODUCTION : STAGING

  describe(`Link URLs of a ${environment} instance under forged addresses`, { timeout: 60_000 }, () => {
    let dir: string | undefined
    let server: ServerProcess | undefined
    let token = ''
    let petId = ''

    const running = (): ServerProcess => {
      assert.ok(server !== undefined, 'the server was not started')
      return server
    }

    before(async () => {
      dir = makeTempDir()
      const env = {
        DATABASE_URL: sqliteUrl(dir),
        PETSTORE_ENV: environment,
        PUBLIC_BASE_URL: PRODUCTION,
        STAGING_BASE_URL: STAGING,
        // Fastify then believes X-Forwarded-Host and -Proto: the URLs must still not.
        TRUST_PROXY: 'true'
      }
      server = await startServer(env)
      token = (await createKey(env, ['--plan', 'pro', '--name', 'links'])).token
      for (const name of ['L1', 'L2', 'L3']) {
        const response = await fetch(`${server.origin}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: newPetJson({ name }),
          signal: AbortSignal.timeout(5_000)
        })
        assert.equal(response.status, 201)
        petId = idsIn(await response.text())[0] ?? ''
      }
    })

    after(async () => {
      await server?.dispose()
      removeTempDir(dir)
    })

    it(`When the OpenAPI document is first asked for with forged addresses, then its servers are ${PRODUCTION} and ${STAGING} only`, async () => {
      for (const forgery of FORGERIES) {
        const response = await send(running(), token, forgery, '/v1/openapi.json')

        assert.equal(response.status, 200, `${forgery.name}: ${response.body.slice(0, 200)}`)
        const servers = (JSON.parse(response.body) as { servers: Array<{ url: string }> }).servers.map((s) => s.url)
        assert.deepEqual(servers.filter((url) => url !== PRODUCTION && url !== STAGING), [], `${forgery.name}: ${servers.join(', ')}`)
        assert.doesNotMatch(response.body, /evil/, forgery.name)
      }
    })

    for (const forgery of FORGERIES) {
      it(`When listPets is sent with ${forgery.name}, then its next link starts with ${base}`, async () => {
        const response = await send(running(), token, forgery, '/v1/pets?limit=1')

        assert.equal(response.status, 200, response.body)
        const next = linkTarget(response.headers.get('link'), 'next') ?? ''
        assert.ok(next.startsWith(`${base}/pets?`), `${forgery.name}: ${next}`)
        assert.doesNotMatch(response.headers.get('link') ?? '', /evil/)
      })

      it(`When getPet is sent with ${forgery.name}, then its successor-version and deprecation links start with ${base}`, async () => {
        const response = await send(running(), token, forgery, `/v1/pets/${petId}`)

        assert.equal(response.status, 200, response.body)
        const link = response.headers.get('link')
        assert.equal(linkTarget(link, 'successor-version'), `${base}/pets`, `${forgery.name}: ${link}`)
        assert.equal(linkTarget(link, 'deprecation'), `${base}/docs`, `${forgery.name}: ${link}`)
        assert.doesNotMatch(link ?? '', /evil/)
      })
    }
  })
}
