// Tracing must be registered before Fastify is first imported
// (bin/petstore.js, src/tracing/start.ts): each case runs in a process of its
// own, since Fastify, once loaded, stays in the module cache.
import { execFile } from 'node:child_process'
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Whether Fastify (CommonJS, so in require's cache once imported) is loaded after importing `modules` in turn; `start` calls startTracing. */
async function fastifyLoadedAfter (modules: string[], start: boolean): Promise<boolean> {
  const urls = modules.map((name) => new URL(name, import.meta.url).href)
  const program = [
    "import { createRequire } from 'node:module'",
    `for (const url of ${JSON.stringify(urls)}) {`,
    '  const loaded = await import(url)',
    start ? "  if (loaded.startTracing !== undefined) await loaded.startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })" : '',
    '}',
    'const cache = createRequire(import.meta.url).cache',
    "console.log(Object.keys(cache).some((path) => path.includes('/node_modules/fastify/')))"
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--input-type=module', '--eval', program], { timeout: 20_000 })
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as boolean
}

describe('tracing at start', () => {
  it('When tracing is started, then Fastify has not been imported yet', async () => {
    // Act
    const loaded = await fastifyLoadedAfter(['../../src/tracing/start.js'], true)

    // Assert
    assert.equal(loaded, false)
  })

  it('When the request log is imported, then Fastify is loaded (the check above can see it)', async () => {
    // Act
    const loaded = await fastifyLoadedAfter(['../../src/telemetry/request-log.js'], false)

    // Assert
    assert.equal(loaded, true)
  })
})
