// Regression: on Node 24, `npm start` aborted within seconds with
// "Assertion failed: (env) != nullptr" in node::RemoveEnvironmentCleanupHook,
// called from better-sqlite3 12's Statement::~Statement() when the GC
// collected a statement (src/db/sqlite/driver.ts says why, and which driver
// each Node gets). The abort needs no particular request, only garbage
// collection, so the guard is the service under sustained mixed load: on
// every supported Node it must stay up, answer everything, and exit cleanly.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createKey, idsIn, makeTempDir, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'
import { FIRST_UNSAFE_INTEGER, bearer, newPetJson } from '../support/fixtures.js'
import { iterations } from '../support/soak.js'

/** Five seconds in `npm test`; a minute under `npm run test:soak`. */
const LOAD_MS = iterations(5_000, 60_000)
const WORKERS = 8
const REQUEST_TIMEOUT_MS = 5_000

interface Step {
  name: string
  expect: number
  send: (origin: string, headers: Record<string, string>, petId: string) => Promise<Response>
}

const STEPS: readonly Step[] = [
  {
    name: 'POST /v1/pets',
    expect: 201,
    send: async (origin, headers) => await fetch(`${origin}/v1/pets`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: newPetJson({ name: 'Load', categoryId: FIRST_UNSAFE_INTEGER, status: 'sold' }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    })
  },
  {
    name: 'GET /v1/pets?limit=20',
    expect: 200,
    send: async (origin, headers) => await fetch(`${origin}/v1/pets?limit=20`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  },
  {
    name: 'GET /v1/pets?status=sold&limit=100',
    expect: 200,
    send: async (origin, headers) => await fetch(`${origin}/v1/pets?status=sold&limit=100`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  },
  {
    name: 'GET /v1/pets/{petId}',
    expect: 200,
    send: async (origin, headers, petId) => await fetch(`${origin}/v1/pets/${petId}`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  },
  {
    // Each readiness check prepares statements of its own: garbage for the GC.
    name: 'GET /readyz',
    expect: 200,
    send: async (origin) => await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  }
]

describe(`Regression: the Node 24 abort "Assertion failed: (env) != nullptr" in better-sqlite3's Statement destructor (Node ${process.versions.node})`, { timeout: LOAD_MS + 60_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined

  after(async () => {
    await server?.dispose()
    removeTempDir(dir)
  })

  it(`When the service serves ${LOAD_MS / 1000} s of mixed load, then it never dies, answers every request as expected, and exits 0 on SIGTERM`, async () => {
    // Arrange
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createKey(env, [
      '--plan', 'enterprise', '--name', 'load', '--per-minute', '1000000', '--per-day', '100000000'
    ])
    const running = server = await startServer({ ...env, LOG_LEVEL: 'warn' })
    const headers = bearer(token)
    const seed = await STEPS[0]?.send(running.origin, headers, '')
    const seedText = await seed?.text()
    const petId = idsIn(seedText ?? '')[0]
    assert.ok(petId !== undefined, `the first POST gave no id: ${seedText}`)
    const answered = new Map<string, number>()
    const unexpected: string[] = []
    const stopAt = Date.now() + LOAD_MS

    async function worker (offset: number): Promise<void> {
      for (let i = offset; Date.now() < stopAt && running.exited === undefined; i++) {
        const step = STEPS[i % STEPS.length] as Step
        try {
          const response = await step.send(running.origin, headers, petId as string)
          const text = await response.text()
          if (response.status === step.expect) answered.set(step.name, (answered.get(step.name) ?? 0) + 1)
          else unexpected.push(`${step.name}: ${response.status} ${text.slice(0, 200)}`)
        } catch (error) {
          unexpected.push(`${step.name}: ${String(error)}`)
        }
      }
    }

    // Act
    await Promise.all(Array.from({ length: WORKERS }, async (_, i) => await worker(i)))
    const aliveAfterLoad = running.exited === undefined
    const exit = await running.stop()

    // Assert
    assert.ok(aliveAfterLoad, `the service died under load (${JSON.stringify(running.exited)}):\n${running.stderr.slice(-2000)}`)
    assert.deepEqual(unexpected.slice(0, 10), [], `${unexpected.length} requests went wrong`)
    for (const step of STEPS) assert.ok((answered.get(step.name) ?? 0) >= 20, `too few ${step.name} answered: ${answered.get(step.name) ?? 0}`)
    assert.deepEqual(exit, { code: 0, signal: null }, running.stderr.slice(-2000))
    assert.doesNotMatch(running.stderr, /Assertion failed/)
  })
})
