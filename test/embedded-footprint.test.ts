// An embedded instance (SQLite, the in-process rate-limit store, no metrics
// port, JSON logs, no tracing) loads none of the clients it does not use:
// the PostgreSQL and Redis clients, prom-client, pino-pretty and
// OpenTelemetry stay on disk, and out of its memory (docs/PERFORMANCE.md,
// RSS). Each is loaded once configured.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PROJECT_ROOT } from './support/process.js'
import { freshPostgresDatabase } from './support/postgres.js'
import { testRedisUrl } from './support/redis.js'

const run = promisify(execFile)

/** Packages that only some configurations need: the clients, the metrics, pretty logs, and tracing's. */
const OPTIONAL = [
  'pg', 'ioredis', 'prom-client', 'pino-pretty',
  '@opentelemetry', '@fastify/otel', 'import-in-the-middle', 'require-in-the-middle'
]
const TRACING = ['@opentelemetry', '@fastify/otel', 'import-in-the-middle', 'require-in-the-middle']

/** What only `petstore serve` needs: the key and store commands load none of it (src/cli/program.ts). */
const SERVER = ['fastify', 'pino', 'typebox']

/** Where a package is loaded from: its folder in node_modules, or for TypeBox also the module the build bundles it into. */
const PLACES: Record<string, string[]> = { typebox: ['/dist/src/schemas/typebox.js'] }

/**
 * Runs `petstore ARGS` (`serve` unless given) in a child process with `env`,
 * through the process entry (bin/petstore.js, where tracing starts), and
 * gives which of `names` it has loaded once it listens, or once the command
 * is done: what was required (the require cache) or imported (every URL the
 * ES module loader resolved, reported by a loader hook registered first; on
 * Node 20, require() does not pass through it).
 */
async function loadedBy (env: Record<string, string>, args = ['serve'], names = OPTIONAL): Promise<string[]> {
  const bin = join(PROJECT_ROOT, 'bin', 'petstore.js')
  const hook = `
    let port
    export function initialize (data) { port = data.port }
    export async function resolve (specifier, context, next) {
      const resolved = await next(specifier, context)
      port.postMessage(resolved.url)
      return resolved
    }
  `
  const script = `
    import { createRequire, register } from 'node:module'
    import { MessageChannel } from 'node:worker_threads'
    const { port1, port2 } = new MessageChannel()
    const imported = []
    let last
    port1.on('message', (url) => { imported.push(url); if (url === last?.url) last.resolve() })
    port1.unref()
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}), { data: { port: port2 }, transferList: [port2] })
    process.argv = [process.execPath, ${JSON.stringify(bin)}, ...${JSON.stringify(args)}]
    await import(${JSON.stringify(bin)})
    // Messages come in order: once this import's URL is back, every earlier one is too.
    // The port is held meanwhile: a key command has ended by now, and with nothing
    // else to wait for Node would exit 13, the wait unsettled (regression: one run in many).
    port1.ref()
    const sentinel = 'data:text/javascript,export default 1'
    await new Promise((resolve) => { last = { url: sentinel, resolve }; import(sentinel) })
    const files = [...Object.keys(createRequire(import.meta.url).cache), ...imported]
    const places = ${JSON.stringify(Object.fromEntries(names.map((name) => [name, ['/node_modules/' + name + '/', ...(PLACES[name] ?? [])]])))}
    const loaded = ${JSON.stringify(names)}.filter((name) => files.some((file) => places[name].some((place) => file.includes(place))))
    process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n')
    process.exit(0)
  `
  // A file, not `node -e`: under -e, commander reads the arguments from another place in process.argv.
  const dir = mkdtempSync(join(tmpdir(), 'petstore-footprint-'))
  const file = join(dir, 'footprint.mjs')
  writeFileSync(file, script)
  let stderr: string
  try {
    ({ stderr } = await run(process.execPath, [file], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', ...env },
      timeout: 30_000
    }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const line = stderr.split('\n').find((text) => text.startsWith('LOADED '))
  assert.ok(line !== undefined, `no report from the child: ${stderr}`)
  return JSON.parse(line.slice('LOADED '.length)) as string[]
}

describe('what an instance loads', () => {
  it('When the service runs embedded (SQLite, in-process limits, no metrics, JSON logs, no tracing), then it loads no PostgreSQL or Redis client, prom-client, pino-pretty or anything of OpenTelemetry', async () => {
    assert.deepEqual(await loadedBy({ DATABASE_URL: 'sqlite::memory:' }), [])
  })

  it('When metrics and pretty logs are asked for, then prom-client and pino-pretty are loaded, and still no database or Redis client it does not use', async () => {
    const loaded = await loadedBy({ DATABASE_URL: 'sqlite::memory:', ADMIN_PORT: '0', LOG_FORMAT: 'pretty' })
    // prom-client requires OpenTelemetry's API itself (for exemplars), not its SDK: none of it is tracing.
    assert.deepEqual(loaded, ['prom-client', 'pino-pretty', '@opentelemetry'])
  })

  it('When DATABASE_URL is PostgreSQL and REDIS_URL is set, then their clients are loaded', async () => {
    const loaded = await loadedBy({ DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') })
    assert.deepEqual(loaded, ['pg', 'ioredis'])
  })

  it('When OTEL_EXPORTER_OTLP_ENDPOINT is set, then OpenTelemetry and its loader hooks are loaded', async () => {
    // A port where nothing listens: nothing is exported before the child exits.
    const loaded = await loadedBy({ DATABASE_URL: 'sqlite::memory:', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })
    assert.deepEqual(loaded, TRACING)
  })

  it('When an operator runs a key command, then none of the HTTP server is loaded: no Fastify, pino or TypeBox', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-footprint-keys-'))
    try {
      const loaded = await loadedBy({ DATABASE_URL: `sqlite:${join(dir, 'keys.db')}` }, ['keys', 'list'], [...SERVER, ...OPTIONAL])
      assert.deepEqual(loaded, [])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
