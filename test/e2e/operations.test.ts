// The service as an operator runs it: metrics on the admin port, logs for
// machines and for people, and a shutdown that always ends, however the
// process was started and wherever its output goes.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import {
  ServerProcess, createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl, startServer
} from '../support/process.js'
import { bearer } from '../support/fixtures.js'

const REQUEST_TIMEOUT_MS = 5_000

async function get (url: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  return { status: response.status, text: await response.text() }
}

/** Whether a process with this PID still exists. */
function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * npm's own command line, to run `npm start` as users do: the one running
 * these tests when there is one, else the one beside this Node.
 */
function npmCli (): string {
  const running = process.env.npm_execpath
  if (running !== undefined && running.endsWith('.js') && existsSync(running)) return running
  for (const candidate of [
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    join(dirname(process.execPath), 'node_modules', 'npm', 'bin', 'npm-cli.js')
  ]) {
    if (existsSync(candidate)) return candidate
  }
  throw new Error('cannot find npm-cli.js: run the tests with `npm test`')
}

describe('operating the service', { timeout: 90_000 }, () => {
  const dirs: string[] = []
  const servers: ServerProcess[] = []
  const orphans: number[] = []
  const freshEnv = (extra: Record<string, string> = {}): Record<string, string> => {
    const dir = makeTempDir()
    dirs.push(dir)
    return { DATABASE_URL: sqliteUrl(dir), ...extra }
  }
  const track = (server: ServerProcess): ServerProcess => { servers.push(server); return server }

  after(async () => {
    await Promise.all(servers.map(async (server) => await server.dispose()))
    for (const pid of orphans) if (alive(pid)) process.kill(pid, 'SIGKILL')
    for (const dir of dirs) removeTempDir(dir)
  })

  it('When ADMIN_PORT is set, then /metrics there shows requests by route and status, refusals, database timings, webhook deliveries and process metrics, and the public port has no /metrics', async () => {
    // Arrange
    const env = freshEnv({ ADMIN_PORT: '0' })
    const server = track(await startServer(env))
    await server.waitForStdout((out) => out.includes('petstore started'), 5_000, 'the started line')
    const metricsUrl = /"metrics":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.stdout)?.[1]
    assert.ok(metricsUrl !== undefined, `no metrics address in:\n${server.stdout}`)
    const { token } = await createKey(env, ['--plan', 'free'])

    // Act
    await get(`${server.origin}/v1/pets?limit=5`, bearer(token))
    await get(`${server.origin}/v1/pets`)
    const metrics = await get(metricsUrl)
    const publicMetrics = await get(`${server.origin}/metrics`)

    // Assert
    assert.equal(metrics.status, 200)
    assert.match(metrics.text, /^petstore_http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} 1$/m)
    assert.match(metrics.text, /^petstore_http_request_duration_seconds_count\{method="GET",route="\/v1\/pets",status="401"\} 1$/m)
    assert.match(metrics.text, /^petstore_rate_limit_refusals_total\{code="rate_limited"\} 0$/m)
    assert.match(metrics.text, /^petstore_rate_limit_refusals_total\{code="concurrency_limited"\} 0$/m)
    assert.match(metrics.text, /^petstore_rate_limit_store_degraded\{store="memory"\} 0$/m)
    assert.match(metrics.text, /^petstore_db_query_duration_seconds_count\{operation="listPets",outcome="ok"\} 1$/m)
    assert.match(metrics.text, /^process_resident_memory_bytes \d+/m)
    assert.match(metrics.text, /^nodejs_eventloop_lag_p99_seconds /m)
    assert.match(metrics.text, /^petstore_webhook_deliveries_total\{outcome="failed"\} 0$/m)
    assert.match(metrics.text, /^petstore_webhook_retries_total 0$/m)
    assert.match(metrics.text, /^petstore_webhook_oldest_undelivered_seconds [\d.]+$/m)
    assert.equal(publicMetrics.status, 404)
    assert.doesNotMatch(publicMetrics.text, /petstore_/)
  })

  it('When ADMIN_HOST is set, then metrics are served on that address and not on HOST', async () => {
    // Arrange: two loopback addresses, so that the two listeners can be told apart.
    const server = track(await startServer(freshEnv({ ADMIN_PORT: '0', ADMIN_HOST: '127.0.0.2' })))

    // Act
    await server.waitForStdout((out) => out.includes('petstore started'), 5_000, 'the started line')
    const metricsUrl = /"metrics":"(http:\/\/[^"]+\/metrics)"/.exec(server.stdout)?.[1] ?? ''
    const metrics = await get(metricsUrl)

    // Assert
    assert.match(metricsUrl, /^http:\/\/127\.0\.0\.2:\d+\/metrics$/)
    assert.equal(metrics.status, 200)
    assert.match(server.origin, /^http:\/\/127\.0\.0\.1:/)
  })

  it('When LOG_FORMAT=pretty, then the log is written for people, listening line included', async () => {
    const server = track(await startServer(freshEnv({ LOG_FORMAT: 'pretty' })))

    await get(`${server.origin}/v1/pets`, { 'x-request-id': 'pretty-1' })
    await server.waitForStdout((out) => out.includes('pretty-1'), 5_000, 'the request\'s line')

    const lines = server.stdout.trim().split('\n')
    assert.ok(lines.every((line) => !line.startsWith('{')), `a JSON line in:\n${server.stdout}`)
    assert.match(server.stdout, /INFO.*listening on http:\/\/127\.0\.0\.1:\d+/)
    assert.match(server.stdout, /requestId: "pretty-1"/)
  })

  it('When whatever read stdout has gone, then the service keeps answering, and SIGTERM still stops it with code 0 within 10 s', async () => {
    // Arrange: the reader of stdout closes its end, as `petstore serve | head -n 3` does.
    const server = track(await startServer(freshEnv()))
    server.child.stdout.destroy()

    // Act: requests whose log lines have nowhere to go, then SIGTERM.
    const statuses = []
    for (let i = 0; i < 50; i++) statuses.push((await get(`${server.origin}/v1/pets`)).status)
    server.signal('SIGTERM')
    const exit = await server.waitForExit(10_000)

    // Assert
    assert.deepEqual(new Set(statuses), new Set([401]))
    assert.deepEqual(exit, { code: 0, signal: null })
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`When ${signal} is sent to the \`npm start\` process, then the service itself stops gracefully and npm exits`, async () => {
      // Arrange: `npm start` as users run it; --ignore-scripts skips the
      // prestart build, which `npm test` has done already.
      const server = track(new ServerProcess({ HOST: '127.0.0.1', PORT: '0', ...freshEnv() }, [npmCli(), 'start', '--ignore-scripts']))
      await server.waitForListening(30_000)
      const servicePid = Number(/"pid":(\d+)/.exec(server.stdout)?.[1])
      assert.ok(servicePid > 0 && servicePid !== server.pid, `the service's own PID is not in:\n${server.stdout}`)
      orphans.push(servicePid)

      // Act
      server.signal(signal)
      await server.waitForExit(15_000)
      const gone = await pollUntil(async () => alive(servicePid) ? undefined : true, { ms: 10_000, every: 50, what: `service process ${servicePid} to exit` }).catch(() => false)

      // Assert
      assert.equal(gone, true, `the service (PID ${servicePid}) outlived npm and is still serving`)
      assert.match(server.stdout, new RegExp(`"signal":"${signal}".*shutting down`))
      assert.match(server.stdout, /"msg":"stopped"/)
    })
  }

  it('When request lines short and long come in turn, then each is written once, whole, and in the order sent within its worker', async () => {
    // Arrange: URLs from a few bytes to as long as Node takes, each line's request named; several of the log's writes.
    const server = track(await startServer(freshEnv()))
    const lengths = [40, 2_500, 5_400, 5_500, 7_000, 12_000, 60, 16, 15_000, 9_000]
    const sent = [...lengths, ...lengths, ...lengths].map((length, i) => ({ id: `long-${i}`, query: 'q'.repeat(length) }))

    // Act
    for (const { id, query } of sent) await get(`${server.origin}/v1/pets?${query}`, { 'x-request-id': id })
    await server.waitForStdout((out) => sent.every(({ id }) => out.includes(`"requestId":"${id}"`)), 5_000, 'every request\'s line')

    // Assert: every line is JSON, and the requests' lines are the ones sent, with their whole URLs, in the order sent
    // by each writer. Under WORKERS (docs/WORKERS.md) each worker's lines keep their order; the workers' lines interleave.
    const lines = server.stdout.trim().split('\n').map((line) => JSON.parse(line) as { requestId?: string, url?: string, worker?: number })
    const written = lines.filter((line) => line.requestId?.startsWith('long-') === true)
    const byWriter = new Map<number | undefined, typeof written>()
    for (const line of written) byWriter.set(line.worker, [...(byWriter.get(line.worker) ?? []), line])
    const urls = new Map(sent.map(({ id, query }) => [id, `/v1/pets?${query}`]))
    const order = sent.map(({ id }) => id)
    for (const [worker, theirs] of byWriter) {
      assert.deepEqual(theirs.map((line) => [line.requestId, line.url]), theirs.map((line) => [line.requestId, urls.get(line.requestId ?? '')]), `worker ${worker}: whole URLs`)
      const ids = theirs.map((line) => line.requestId ?? '')
      assert.deepEqual(ids, order.filter((id) => ids.includes(id)), `worker ${worker}: in the order sent`)
    }
    assert.deepEqual(written.map((line) => line.requestId).sort(), [...order].sort(), 'each request once')
  })

  it('When whatever reads stdout stops reading, then requests are still answered, and the lines wait in the log\'s buffer', async () => {
    // Arrange: a reader that stops reading once the service listens; the
    // pipe between them holds about 64 KiB, some 250 request lines.
    const server = track(await startServer(freshEnv()))
    server.child.stdout.pause()

    // Act: four times what the pipe holds.
    const statuses = []
    for (let i = 0; i < 1000; i++) statuses.push((await get(`${server.origin}/healthz`, { 'x-request-id': `stuck-${i}` })).status)
    server.child.stdout.resume()

    // Assert: every request answered, and every line written once the reader is back.
    assert.deepEqual(new Set(statuses), new Set([200]))
    await server.waitForStdout((out) => out.includes('"requestId":"stuck-999"'), 10_000, 'the last request\'s line')
    for (const i of [0, 500, 999]) assert.match(server.stdout, new RegExp(`"requestId":"stuck-${i}"`))
  })
})
