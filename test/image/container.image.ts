// The service's image, as operators run it: the container, its volume, its
// key command, its stop. Run by `npm run test:image` (scripts/test-image.js),
// which builds the image first and names it in PETSTORE_IMAGE; named
// *.image.ts so that `npm test` does not pick it up.
//
// One container goes through its life in order (start, key, animal,
// restart, stop), so the tests share it and run one after the other. Then
// two containers share PostgreSQL and Redis (started by the script, as
// `npm test` does).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { setTimeout as delay } from 'node:timers/promises'
import { after, before, describe, test } from 'node:test'
import { OtlpReceiver } from '../support/otlp-receiver.js'
import { freePort } from '../support/ports.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { scaledOutEnvironment } from '../support/scaled-out.js'

const IMAGE = process.env.PETSTORE_IMAGE ?? ''
const RUN_ID = randomUUID().slice(0, 8)
const NAME = `petstore-test-${RUN_ID}`
const VOLUME = `petstore-test-data-${RUN_ID}`
/** How long the service may take to answer at start before the test gives up (not a measure: a start takes a second or two). */
const START_LIMIT_MS = 60_000
/** The contract: the container stops within this of SIGTERM. */
const STOP_LIMIT_S = 10

interface Result { code: number, stdout: string, stderr: string, timedOut: boolean }

/** Runs podman (with the settings scripts/test-image.js put in CONTAINERS_CONF), never throwing. */
async function podman (args: string[], timeoutMs = 120_000): Promise<Result> {
  return await new Promise((resolve) => {
    // SIGKILL past the timeout: podman ends with status 0 on SIGTERM, which would pass for success.
    execFile('podman', args, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      resolve({ code, stdout, stderr, timedOut: error?.killed === true })
    })
  })
}

/** Runs podman and fails the test, with its output, unless it exits 0. */
async function podmanOk (args: string[], timeoutMs?: number): Promise<string> {
  const result = await podman(args, timeoutMs)
  assert.equal(result.code, 0, `podman ${args.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}`)
  return result.stdout
}

/** Milliseconds until /healthz first answers 200, polling; fails after START_LIMIT_MS. */
async function untilHealthy (port: number): Promise<number> {
  const started = performance.now()
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (response.status === 200) return performance.now() - started
    } catch {
      // Not listening yet.
    }
    if (performance.now() - started > START_LIMIT_MS) {
      const logs = await podman(['logs', NAME])
      assert.fail(`/healthz did not answer 200 within ${START_LIMIT_MS / 1000} s:\n${logs.stdout}${logs.stderr}`)
    }
    await delay(100)
  }
}

describe('the container image', { concurrency: false }, () => {
  let port = 0
  let token = ''

  const api = async (path: string, init: RequestInit = {}): Promise<Response> =>
    await fetch(`http://127.0.0.1:${port}/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...init.headers as Record<string, string> }
    })

  before(async () => {
    assert.notEqual(IMAGE, '', 'PETSTORE_IMAGE is not set: run `npm run test:image`')
    port = await freePort()
    await podmanOk(['volume', 'create', VOLUME])
  })

  after(async () => {
    // Only what this run created, by name.
    await podman(['rm', '--force', '--volumes', '--time', '0', NAME])
    await podman(['volume', 'rm', '--force', VOLUME])
  })

  test('When the image is inspected, then it has the contracted entrypoint, user, volume, environment and health check', async () => {
    const [image] = JSON.parse(await podmanOk(['image', 'inspect', IMAGE])) as Array<{
      Config: { User?: string, Entrypoint?: string[], Cmd?: string[], Env?: string[], Volumes?: Record<string, unknown>, ExposedPorts?: Record<string, unknown> }
      Healthcheck?: { Test?: string[] }
    }>
    assert.ok(image !== undefined)
    const { Config: config } = image
    assert.equal(config.User, 'node')
    assert.deepEqual(config.Entrypoint, ['node', 'bin/petstore.js'])
    assert.deepEqual(config.Cmd, ['serve'])
    assert.deepEqual(Object.keys(config.Volumes ?? {}), ['/data'])
    for (const variable of ['NODE_ENV=production', 'HOST=0.0.0.0', 'PORT=8080', 'DATABASE_URL=sqlite:/data/petstore.db']) {
      assert.ok(config.Env?.includes(variable), `${variable} is not in the image's environment: ${String(config.Env)}`)
    }
    assert.equal(image.Healthcheck?.Test?.[1], 'node', `the health check runs node: ${JSON.stringify(image.Healthcheck)}`)
  })

  test('When the image is listed, then it holds no compiler, dev dependency, npm cache, test or TypeScript source', async () => {
    // Everything under /app and the user's home, as the image has it.
    const listing = await podmanOk(['run', '--rm', '--network', 'none', '--entrypoint', 'node', IMAGE, '-e',
      "const fs = require('node:fs'); for (const root of ['/app', '/home/node']) for (const f of fs.readdirSync(root, { recursive: true })) console.log(root + '/' + f)"])
    const files = listing.split('\n').filter((line) => line !== '')
    assert.ok(files.includes('/app/dist/src/cli/main.js'), 'the compiled service is there')
    assert.ok(files.includes('/app/node_modules/fastify/package.json'), 'its production dependencies are there')
    // What the lockfile installs for development only (ajv, say, is both a dev dependency and Fastify's).
    const { packages } = JSON.parse(readFileSync(new URL('../../../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
    const devOnly = new Set(Object.entries(packages).filter(([, entry]) => entry.dev === true).map(([path]) => `/app/${path}`))
    assert.ok(devOnly.has('/app/node_modules/typescript'))
    const unwanted = files.filter((file) =>
      /\.(ts|mts|cts|map)$/.test(file) ||
      /^\/app\/(test|src|bench|client|scripts)(\/|$)/.test(file) ||
      /^\/home\/node\/\.npm(\/|$)/.test(file) ||
      /^\/app\/node_modules\/better-sqlite3\/(deps|src|build)(\/|$)/.test(file) ||
      devOnly.has(file))
    assert.deepEqual(unwanted, [])
  })

  test('When the container starts on an empty volume, then /healthz answers 200 and its health check passes', async (t) => {
    const started = performance.now()
    await podmanOk(['run', '--detach', '--name', NAME, '--network', 'host', '--env', `PORT=${port}`, '--volume', `${VOLUME}:/data`, IMAGE])
    await untilHealthy(port)
    t.diagnostic(`from podman run to the first 200 on /healthz: ${((performance.now() - started) / 1000).toFixed(2)} s`)

    // The image's own HEALTHCHECK, run once now.
    await podmanOk(['healthcheck', 'run', NAME])
  })

  test('When the docs page and its script are asked for, then they are served from what the image kept of the dependencies', async () => {
    const page = await fetch(`http://127.0.0.1:${port}/v1/docs`)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /swagger-ui/i)
    const script = await fetch(`http://127.0.0.1:${port}/v1/docs/static/swagger-ui-bundle.js`)
    assert.equal(script.status, 200)
    assert.ok((await script.arrayBuffer()).byteLength > 100_000)
  })

  test('When the service runs, then it runs as a user other than root', async () => {
    const uid = await podmanOk(['exec', NAME, 'node', '-p', 'process.getuid()'])
    assert.notEqual(uid.trim(), '0')
    assert.equal(uid.trim(), '1000')
  })

  test('When `keys create` runs in another container on the volume, then the server accepts its key', async () => {
    const created = await podmanOk(['run', '--rm', '--network', 'none', '--volume', `${VOLUME}:/data`, IMAGE, 'keys', 'create', '--plan', 'free', '--json'])
    token = (JSON.parse(created) as { token: string }).token
    assert.match(token, /\S{20,}/)

    const response = await api('/pets')
    assert.equal(response.status, 200, await response.text())
  })

  test('When an animal is added and the container stopped and started again, then the animal is still there', async (t) => {
    const added = await api('/pets', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' })
    })
    const body = await added.text()
    assert.equal(added.status, 201, body)
    const pet = JSON.parse(body) as { id: number }

    // SIGTERM, then SIGKILL after the limit: status 0 says the service stopped of itself, in time.
    await podmanOk(['stop', '--time', String(STOP_LIMIT_S), NAME], (STOP_LIMIT_S + 30) * 1000)
    assert.equal((await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', NAME])).trim(), '0')
    const started = performance.now()
    await podmanOk(['start', NAME])
    await untilHealthy(port)
    t.diagnostic(`from podman start to the first 200 on /healthz: ${((performance.now() - started) / 1000).toFixed(2)} s`)

    const listed = await api('/pets')
    assert.equal(listed.status, 200)
    const pets = await listed.json() as Array<{ id: number, name: string }>
    assert.deepEqual(pets.map(({ id, name }) => ({ id, name })), [{ id: pet.id, name: 'Rex' }])
  })

  test('When the container gets SIGTERM, then it stops within 10 s with exit status 0', async (t) => {
    const started = performance.now()
    await podmanOk(['kill', '--signal', 'TERM', NAME])
    // `podman wait` prints the exit status once the container has stopped;
    // killed past the limit, the test fails rather than waits.
    const waited = await podman(['wait', NAME], STOP_LIMIT_S * 1000)
    assert.equal(waited.timedOut, false, `the container did not stop within ${STOP_LIMIT_S} s of SIGTERM`)
    assert.equal(waited.code, 0, `podman wait exited ${waited.code}: ${waited.stderr}`)
    t.diagnostic(`from SIGTERM to the container's end: ${((performance.now() - started) / 1000).toFixed(2)} s`)
    assert.equal(waited.stdout.trim(), '0')
    // It stopped by its own shutdown, not by a kill: it said so last.
    const logs = await podmanOk(['logs', NAME])
    const messages = logs.split('\n').filter((line) => line.startsWith('{')).map((line) => (JSON.parse(line) as { msg?: string }).msg)
    assert.equal(messages.at(-1), 'stopped', logs)
  })
})

describe('two containers on one PostgreSQL database and one Redis, as compose.yaml runs them', { concurrency: false }, () => {
  const names = [`${NAME}-a`, `${NAME}-b`]

  after(async () => {
    // By name, with the anonymous volume each got for /data (its VOLUME).
    await Promise.all(names.map(async (name) => await podman(['rm', '--force', '--volumes', '--time', '0', name])))
  })

  test('When requests with one key are split over two containers, then together they admit exactly its per-minute limit', async () => {
    // Arrange
    const redisUrl = process.env.PETSTORE_TEST_REDIS_URL
    assert.ok(redisUrl !== undefined && redisUrl !== '', 'PETSTORE_TEST_REDIS_URL is not set: run `npm run test:image`')
    // The environment compose.yaml gives its instances, with this machine's addresses.
    const databaseUrl = await freshPostgresDatabase()
    const ports = [await freePort(), await freePort()]
    const adminPorts = [await freePort(), await freePort()]
    const envOf = (i: number): string[] => Object.entries({
      ...scaledOutEnvironment({ databaseUrl, redisUrl, publicBaseUrl: `http://127.0.0.1:${ports[i]}/v1`, adminHost: '127.0.0.1', adminPort: adminPorts[i] ?? 0 }),
      PORT: String(ports[i])
    }).flatMap(([name, value]) => ['--env', `${name}=${value}`])
    const limit = 10
    const created = await podmanOk(['run', '--rm', '--network', 'host', ...envOf(0), IMAGE,
      'keys', 'create', '--plan', 'enterprise', '--per-minute', String(limit), '--per-day', '1000', '--json'])
    const { token } = JSON.parse(created) as { token: string }
    await Promise.all(names.map(async (name, i) =>
      await podmanOk(['run', '--detach', '--name', name, '--network', 'host', ...envOf(i), IMAGE])))
    await Promise.all(ports.map(async (port) => await untilHealthy(port)))
    for (const adminPort of adminPorts) {
      assert.equal((await fetch(`http://127.0.0.1:${adminPort}/metrics`)).status, 200, 'each container serves its metrics on its admin port')
    }
    // A minute window that ends during the test would admit a second quota.
    const toNextMinute = 60_000 - (Date.now() % 60_000)
    if (toNextMinute < 10_000) await delay(toNextMinute + 200)

    // Act
    const statuses = await Promise.all(Array.from({ length: 3 * limit }, async (_, i) =>
      (await fetch(`http://127.0.0.1:${ports[i % 2]}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status))

    // Assert
    assert.equal(statuses.filter((status) => status === 200).length, limit, String(statuses))
    assert.equal(statuses.filter((status) => status === 429).length, 2 * limit, String(statuses))
  })
})

describe('a container with tracing on', { concurrency: false }, () => {
  const name = `${NAME}-traced`
  let receiver: OtlpReceiver | undefined

  after(async () => {
    await podman(['rm', '--force', '--volumes', '--time', '0', name])
    await receiver?.close()
  })

  test('When OTEL_EXPORTER_OTLP_ENDPOINT is set, then the container sends each request\'s span, with its PostgreSQL and Redis calls under it', async () => {
    // Arrange: the image's Node.js, and its production dependencies as the image strips them.
    const redisUrl = process.env.PETSTORE_TEST_REDIS_URL
    assert.ok(redisUrl !== undefined && redisUrl !== '', 'PETSTORE_TEST_REDIS_URL is not set: run `npm run test:image`')
    receiver = await OtlpReceiver.start()
    const port = await freePort()
    const env = ['--env', `DATABASE_URL=${await freshPostgresDatabase()}`, '--env', `REDIS_URL=${redisUrl}`]
    const created = await podmanOk(['run', '--rm', '--network', 'host', ...env, IMAGE, 'keys', 'create', '--plan', 'free', '--json'])
    const { token } = JSON.parse(created) as { token: string }
    await podmanOk(['run', '--detach', '--name', name, '--network', 'host', ...env, '--env', `PORT=${port}`,
      '--env', `OTEL_EXPORTER_OTLP_ENDPOINT=${receiver.endpoint}`, '--env', 'OTEL_BSP_SCHEDULE_DELAY=50', IMAGE])
    await untilHealthy(port)
    const traceId = randomUUID().replaceAll('-', '')

    // Act
    const response = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
    assert.equal(response.status, 200)
    const started = performance.now()
    while (!receiver.spans.some((span) => span.traceId === traceId && span.scope === '@fastify/otel') && performance.now() - started < 10_000) await delay(50)

    // Assert
    const spans = receiver.spans.filter((span) => span.traceId === traceId)
    const request = spans.find((span) => span.scope === '@fastify/otel')
    assert.ok(request !== undefined, `no request span: ${JSON.stringify(receiver.spans)}`)
    assert.equal(request.parentSpanId, '00f067aa0ba902b7')
    assert.equal(request.attributes['http.route'], '/v1/pets')
    for (const scope of ['@opentelemetry/instrumentation-pg', '@opentelemetry/instrumentation-ioredis']) {
      assert.ok(spans.some((span) => span.scope === scope && span.parentSpanId === request.spanId), `no ${scope} span under the request's: ${JSON.stringify(spans)}`)
    }
  })
})
