// An embedded instance (SQLite, the in-process rate-limit store, no metrics
// port, JSON logs) loads none of the clients it does not use: the PostgreSQL
// and Redis clients, prom-client and pino-pretty stay on disk, and out of
// its memory (docs/PERFORMANCE.md, RSS). Each is loaded once configured.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PROJECT_ROOT } from './support/process.js'
import { freshPostgresDatabase } from './support/postgres.js'
import { testRedisUrl } from './support/redis.js'

const run = promisify(execFile)

/** Packages that only some configurations need. */
const OPTIONAL = ['pg', 'ioredis', 'prom-client', 'pino-pretty']

/**
 * Runs `petstore serve` in a child process with `env`, through the command
 * line's own program, and gives which of OPTIONAL it has loaded once it
 * listens. They are CommonJS packages, so a loaded one is in the require
 * cache.
 */
async function loadedBy (env: Record<string, string>): Promise<string[]> {
  const program = join(PROJECT_ROOT, 'dist', 'src', 'cli', 'program.js')
  const script = `
    import { createRequire } from 'node:module'
    const { buildProgram } = await import(${JSON.stringify(program)})
    await buildProgram('0.0.0', { onServe: () => {} }).parseAsync(['serve'], { from: 'user' })
    const files = Object.keys(createRequire(import.meta.url).cache)
    const loaded = ${JSON.stringify(OPTIONAL)}.filter((name) => files.some((file) => file.includes('/node_modules/' + name + '/')))
    process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n')
    process.exit(0)
  `
  const { stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', ...env },
    timeout: 30_000
  })
  const line = stderr.split('\n').find((text) => text.startsWith('LOADED '))
  assert.ok(line !== undefined, `no report from the child: ${stderr}`)
  return JSON.parse(line.slice('LOADED '.length)) as string[]
}

describe('what an instance loads', () => {
  it('When the service runs embedded (SQLite, in-process limits, no metrics, JSON logs), then it loads no PostgreSQL or Redis client, prom-client or pino-pretty', async () => {
    assert.deepEqual(await loadedBy({ DATABASE_URL: 'sqlite::memory:' }), [])
  })

  it('When metrics and pretty logs are asked for, then prom-client and pino-pretty are loaded, and still no database or Redis client it does not use', async () => {
    const loaded = await loadedBy({ DATABASE_URL: 'sqlite::memory:', ADMIN_PORT: '0', LOG_FORMAT: 'pretty' })
    assert.deepEqual(loaded, ['prom-client', 'pino-pretty'])
  })

  it('When DATABASE_URL is PostgreSQL and REDIS_URL is set, then their clients are loaded', async () => {
    const loaded = await loadedBy({ DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: testRedisUrl('single') })
    assert.deepEqual(loaded, ['pg', 'ioredis'])
  })
})
