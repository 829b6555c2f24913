// A worker that dies under write load: the supervisor runs in this test's
// process, so that one worker thread can be ended abruptly
// (`worker.terminate()` stops its JavaScript wherever it is, as kill -9
// stops a process; a signal would end every thread at once).
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'node:http'
import type { Worker } from 'node:worker_threads'
import { loadConfig, sharesPorts } from '../../src/config.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { createLog } from '../../src/telemetry/log.js'
import { startWorkers, type Workers } from '../../src/workers/supervisor.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl } from '../support/process.js'

interface Answer { status: number, text: string }

async function create (port: number, token: string, name: string): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const body = newPetJson({ name })
    const outgoing = request({
      host: '127.0.0.1',
      port,
      path: '/v1/pets',
      method: 'POST',
      agent: false,
      timeout: 10_000,
      headers: { ...bearer(token), 'content-type': 'application/json' }
    }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => { resolve({ status: response.statusCode ?? 0, text }) })
    })
    outgoing.on('error', reject).on('timeout', () => { outgoing.destroy(new Error('no answer')) })
    outgoing.end(body)
  })
}

describe('a worker that dies', { skip: !sharesPorts(process.versions.node) && 'this Node.js cannot share a port between threads', timeout: 120_000 }, () => {
  const dir = makeTempDir()
  const lines: string[] = []
  let workers: Workers | undefined
  after(async () => {
    await workers?.stop()
    removeTempDir(dir)
  })

  it('When one worker is ended abruptly under write load, then it is replaced, the other goes on serving, and every acknowledged animal is stored', async (t) => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createKey(env, ['--plan', 'enterprise', '--name', 'load', '--per-minute', '1000000', '--per-day', '10000000'])
    /** `worker N accepting connections at …` lines: a worker writes one as it begins to listen, a replacement too. */
    let accepting = 0
    const log = createLog({ level: 'info', format: 'json' }, {
      write: (text) => {
        lines.push(text)
        accepting += text.split('accepting connections at').length - 1
      },
      flush: async () => {},
      dropped: () => 0
    })
    workers = await startWorkers(loadConfig({ ...env, HOST: '127.0.0.1', PORT: '0', WORKERS: '2' }), log)
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lines.join(''))?.[1])
    const [victim, survivor] = workers.threads()
    assert.ok(victim !== undefined && survivor !== undefined)
    // Read now: an ended worker's threadId is -1.
    const victimId = victim.threadId
    const acknowledged = new Map<string, string>()
    const failures: string[] = []
    const load = { stopped: false }
    let sent = 0
    /** Once the worker is ended, the lines read so far: until another comes, only the other worker answers. */
    let acceptingAtEnd: number | undefined
    let whileAlone = 0
    const clients = Array.from({ length: 8 }, async (_, client) => {
      while (!load.stopped) {
        const name = `pet-${client}-${sent++}`
        try {
          const answer = await create(port, token, name)
          if (answer.status === 201) {
            acknowledged.set(name, answer.text)
            if (acceptingAtEnd !== undefined && accepting === acceptingAtEnd) whileAlone++
          } else failures.push(`${answer.status} ${answer.text}`)
        } catch (error) {
          // A connection the ended worker held is cut: the client sees an error, never a wrong answer.
          failures.push(`cut: ${String(error)}`)
        }
      }
    })

    // Act
    let beforeEnd = 0
    let replaced: Worker[] = []
    try {
      beforeEnd = await pollUntil(async () => acknowledged.size >= 20 ? acknowledged.size : undefined, { ms: 30_000, every: 20, what: '20 animals acknowledged' })
      await victim.terminate()
      const atEnd = accepting
      acceptingAtEnd = atEnd
      // Until a replacement accepts connections, or the other worker has acknowledged an animal, whichever comes first.
      await pollUntil(async () => whileAlone > 0 || accepting > atEnd ? true : undefined, { ms: 30_000, every: 10, what: 'an animal acknowledged by the other worker' })
      replaced = await pollUntil(async () => {
        const now = workers?.threads() ?? []
        return now.length === 2 && !now.includes(victim) ? now : undefined
      }, { ms: 30_000, every: 50, what: 'a replacement worker' })
      // The replacement listening, and more animals acknowledged under load with it.
      await pollUntil(async () => accepting > atEnd ? true : undefined, { ms: 30_000, every: 20, what: 'the replacement accepting connections' })
      const withReplacement = acknowledged.size
      await pollUntil(async () => acknowledged.size >= withReplacement + 20 ? true : undefined, { ms: 30_000, every: 20, what: '20 more animals acknowledged' })
    } finally {
      // However the wait ended, the clients stop: a test that fails must not go on loading the machine.
      load.stopped = true
      await Promise.all(clients)
    }

    // Assert
    assert.ok(replaced.includes(survivor))
    assert.ok(beforeEnd > 0, 'no animal was added before the end')
    assert.ok(whileAlone > 0, 'the other worker added nothing while the first was being replaced')
    assert.match(lines.join(''), new RegExp(`"msg":"worker ${victimId} stopped \\(exit code 1\\): starting another`))
    assert.deepEqual(failures.filter((failure) => !failure.startsWith('cut:')), [])
    const storage = openSqlite(sqliteUrl(dir))
    try {
      for (const [name, text] of acknowledged) {
        const id = BigInt(/"id":(\d+)/.exec(text)?.[1] ?? '0')
        assert.equal((await storage.getPet(id))?.name, name, `animal ${id} (${name}) was acknowledged but is not stored`)
      }
    } finally {
      await storage.close()
    }
    t.diagnostic(`${acknowledged.size} animals acknowledged, every one stored; ${failures.length} connections cut; ${whileAlone} added by the other worker before the replacement accepted connections`)
  })
})
