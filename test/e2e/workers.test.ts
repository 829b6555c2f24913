// WORKERS=2 (docs/WORKERS.md): one service on every core of one machine,
// without Redis. Requests go on new connections, which the kernel spreads
// over the workers, so a count kept per worker would show. The workers
// share one port through reusePort, which Node.js 20 lacks: there, the start
// must fail and say why.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { request } from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'
import { sharesPorts } from '../../src/config.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { freePort } from '../support/ports.js'
import { awayFromMinuteEdge } from '../support/redis.js'
import { keyListFile, makeScanner, report } from '../support/scanner.js'
import { Database } from '../../src/db/sqlite/driver.js'
import { ServerProcess, createKey, databaseFile, idsIn, makeTempDir, pollUntil, removeTempDir, runCli, sqliteUrl, startServer } from '../support/process.js'

const SHARES_PORTS = sharesPorts(process.versions.node)

interface Answer { status: number, text: string }

/** One request on a connection of its own. */
async function send (
  port: number, path: string, { method = 'GET', headers = {}, body, timeoutMs = 10_000 }: { method?: string, headers?: Record<string, string>, body?: string, timeoutMs?: number } = {}
): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port, path, method, headers, agent: false, timeout: timeoutMs }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => { resolve({ status: response.statusCode ?? 0, text }) })
    })
    outgoing.on('error', reject).on('timeout', () => { outgoing.destroy(new Error(`${method} ${path}: no answer`)) })
    outgoing.end(body)
  })
}

/** The request lines for `url` in a server's log (each worker writes its lines in order). */
function linesFor (stdout: string, url: string): number {
  return stdout.split(`"url":"${url}"`).length - 1
}

function count (statuses: number[], status: number): number {
  return statuses.filter((each) => each === status).length
}

describe('WORKERS on a Node.js without reusePort', { skip: SHARES_PORTS && 'this Node.js shares ports' }, () => {
  it('When WORKERS=2 is asked for, then the start fails and names the Node.js needed', async () => {
    const dir = makeTempDir()
    try {
      const result = await runCli(['serve'], { DATABASE_URL: sqliteUrl(dir), PORT: '0', WORKERS: '2' })
      assert.notEqual(result.code, 0)
      assert.match(result.stderr, /WORKERS=2 needs Node\.js 22\.12 or later/)
    } finally {
      removeTempDir(dir)
    }
  })
})

describe('two workers on one SQLite file, limits in memory', { skip: !SHARES_PORTS && 'this Node.js cannot share a port between threads', timeout: 120_000 }, () => {
  const dir = makeTempDir()
  const env = { DATABASE_URL: sqliteUrl(dir), WORKERS: '2', ADMIN_PORT: '0', RATE_LIMIT_BAN_THRESHOLD: '5' }
  let server: ServerProcess
  before(async () => { server = await startServer(env, 30_000) })
  after(async () => {
    await server.dispose()
    removeTempDir(dir)
  })

  it('When it starts, then it says `listening on` once and both workers serve', async () => {
    // Act
    const answers = await Promise.all(Array.from({ length: 40 }, async () => await send(server.port, '/healthz')))
    // A thread writes its start before its request lines: once every request's line is in, so is any second `listening on`.
    await server.waitForStdout((stdout) => linesFor(stdout, '/healthz') >= 40, 30_000, 'a line for each of the 40 requests')

    // Assert
    assert.deepEqual(new Set(answers.map(({ status }) => status)), new Set([200]))
    assert.equal(server.stdout.match(/listening on http:/g)?.length, 1)
    assert.match(server.stdout, /"workers":2,.*"msg":"petstore started"/)
    const workers = new Set([...server.stdout.matchAll(/"worker":(\d+).*"url":"\/healthz"/g)].map((match) => match[1]))
    assert.equal(workers.size, 2, `request lines came from workers ${[...workers].join(', ')}`)
  })

  it('When a key sends past its per-minute limit through both workers, then exactly its limit is admitted and the ban is earned once', async () => {
    // Arrange
    const { token } = await createKey(env, ['--plan', 'enterprise', '--name', 'split', '--per-minute', '10', '--per-day', '100000'])
    await awayFromMinuteEdge(5_000)

    // Act
    const statuses = (await Promise.all(Array.from({ length: 40 }, async () => await send(server.port, '/v1/pets?limit=1', { headers: bearer(token) }))))
      .map(({ status }) => status)
    // A ban is logged while the refusal that earned it is decided, before that request's line: once every line is in, so is every ban.
    await server.waitForStdout((stdout) => linesFor(stdout, '/v1/pets?limit=1') >= 40, 30_000, 'a line for each of the 40 requests')

    // Assert
    assert.equal(count(statuses, 200), 10, statuses.join(' '))
    assert.equal(count(statuses, 429), 30, statuses.join(' '))
    assert.equal(server.stdout.match(/"msg":"API key \d+ banned until/g)?.length, 1)
  })

  it('When a client without a key sends past the per-address limit through both workers, then exactly 60 are answered before 429', async () => {
    // Arrange
    await awayFromMinuteEdge(5_000)

    // Act
    const statuses = (await Promise.all(Array.from({ length: 75 }, async () => await send(server.port, '/v1/pets')))).map(({ status }) => status)

    // Assert
    assert.equal(count(statuses, 401), 60, statuses.join(' '))
    assert.equal(count(statuses, 429), 15, statuses.join(' '))
  })

  it('When one Idempotency-Key is sent several times at once, then one animal is created, and each answer names it or says the key is in use', async () => {
    // Arrange
    const { token } = await createKey(env, ['--plan', 'enterprise', '--name', 'once', '--per-minute', '100000', '--per-day', '1000000'])
    const init = { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': 'same-key' }, body: newPetJson({ name: 'once' }) }

    // Act
    const answers = await Promise.all(Array.from({ length: 8 }, async () => await send(server.port, '/v1/pets', init)))
    const listed = await send(server.port, '/v1/pets?limit=100', { headers: bearer(token) })

    // Assert
    const texts = answers.map(({ text }) => text).join('\n')
    assert.ok(answers.every(({ status, text }) => status === 201 || (status === 409 && text.includes('"idempotency_key_in_use"'))), texts)
    assert.equal(new Set(answers.filter(({ status }) => status === 201).flatMap(({ text }) => idsIn(text))).size, 1, texts)
    assert.equal(listed.text.match(/"name":"once"/g)?.length, 1)
  })

  it('When /metrics is read, then it adds up every worker\'s requests and reports the process and the webhook dispatcher once', async () => {
    // Arrange
    const adminPort = Number(/"metrics":"http:\/\/127\.0\.0\.1:(\d+)\/metrics"/.exec(server.stdout)?.[1])
    const before = await send(adminPort, '/metrics')
    const answered = (text: string): number => [...text.matchAll(/^petstore_http_requests_total\{[^}]*route="\/readyz"[^}]*\} (\d+)$/gm)]
      .reduce((sum, match) => sum + Number(match[1]), 0)

    // Act
    await Promise.all(Array.from({ length: 30 }, async () => await send(server.port, '/readyz')))
    const after = await send(adminPort, '/metrics')

    // Assert
    assert.equal(answered(after.text) - answered(before.text), 30)
    assert.equal(after.text.match(/^process_cpu_seconds_total /gm)?.length, 1)
    // The dispatcher is the main thread's: its series are there once, and no worker's are added to them.
    assert.equal(after.text.match(/^petstore_webhook_deliveries_total\{outcome="succeeded"\} 0$/gm)?.length, 1, after.text)
    // Any age: an animal added by an earlier test may wait for its turn to be fanned out.
    assert.equal(after.text.match(/^petstore_webhook_oldest_undelivered_seconds \S+$/gm)?.length, 1, after.text)
  })

  it('When a second service with workers is started on its port, then that one refuses to start, naming PORT, rather than share the port', async () => {
    // Arrange: its own store, so that only the port is in common.
    const other = makeTempDir()
    try {
      // Act
      const result = await runCli(['serve'], { DATABASE_URL: sqliteUrl(other), HOST: '127.0.0.1', PORT: String(server.port), WORKERS: '2' }, 30_000)

      // Assert
      assert.equal(result.code, 1, result.stdout + result.stderr)
      assert.match(result.stderr, new RegExp(`cannot listen on HOST=127\\.0\\.0\\.1 PORT=${server.port}: .*EADDRINUSE`))
    } finally {
      removeTempDir(other)
    }
  })

  it('When two services with workers are started on one free port at the same moment, then one refuses to start rather than share it', async () => {
    // Arrange: stores of their own, so that only the port is in common.
    const dirs = [makeTempDir(), makeTempDir()]
    const port = await freePort()

    // Act: the first holds the port while its workers open their stores; the second asks for it meanwhile.
    const services = dirs.map((dir) => new ServerProcess({ DATABASE_URL: sqliteUrl(dir), HOST: '127.0.0.1', PORT: String(port), WORKERS: '2' }))
    try {
      const started = await Promise.allSettled(services.map(async (service) => await service.waitForListening(30_000)))

      // Assert
      assert.deepEqual(started.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected'], services.map((service) => service.stdout + service.stderr).join('\n---\n'))
      const refused = services.find((service) => service.exited !== undefined)
      assert.match(refused?.stderr ?? '', new RegExp(`cannot listen on HOST=127\\.0\\.0\\.1 PORT=${port}: .*EADDRINUSE`))
    } finally {
      await Promise.all(services.map(async (service) => await service.dispose()))
      for (const dir of dirs) removeTempDir(dir)
    }
  })

  it('When 200 creates of one free key arrive at once through both workers while the database is held, then exactly its cap of 5 is in flight, and the rest get 429 concurrency_limited', async () => {
    // Arrange: the test holds the database's write lock, so the creates admitted stay in flight.
    const { token } = await createKey(env, ['--plan', 'free', '--name', 'in-flight'])
    await awayFromMinuteEdge(5_000)
    const holder = new Database(databaseFile(dir))
    holder.exec('BEGIN IMMEDIATE')
    let answers: Answer[]
    try {
      // Act
      const sent = Array.from({ length: 200 }, async (_, n) => await send(server.port, '/v1/pets', {
        method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: newPetJson({ name: `in-flight-${n}` })
      }))
      // The creates over the cap wait 250 ms for a slot, then are refused; the five admitted wait for the lock, up to 5 s.
      await delay(3_000)
      holder.exec('COMMIT')
      answers = await Promise.all(sent)
    } finally {
      if (holder.inTransaction) holder.exec('COMMIT')
      holder.close()
    }

    // Assert
    const statuses = answers.map(({ status, text }) => status === 429 ? `429 ${/"code":"(\w+)"/.exec(text)?.[1] ?? ''}` : String(status))
    const tally = [...new Set(statuses)].map((status) => `${statuses.filter((each) => each === status).length} × ${status}`).join(', ')
    assert.equal(count(answers.map(({ status }) => status), 201), 5, tally)
    assert.equal(statuses.filter((status) => status === '429 concurrency_limited').length, 195)
  })

  it('When it is asked to stop, then every worker stops and the process exits 0', async () => {
    // Act
    const exit = await server.stop(40_000)

    // Assert
    assert.equal(exit?.code, 0, server.stdout + server.stderr)
    assert.match(server.stdout, /"msg":"stopped"/)
  })
})

describe('leaked tokens through two workers on one SQLite file', { skip: !SHARES_PORTS && 'this Node.js cannot share a port between threads', timeout: 120_000 }, () => {
  const dir = makeTempDir()
  const github = makeScanner()
  const env = { DATABASE_URL: sqliteUrl(dir), WORKERS: '2', SECRET_SCANNING_KEYS_URL: keyListFile(github) }
  let server: ServerProcess
  before(async () => { server = await startServer(env, 30_000) })
  after(async () => {
    await server.dispose()
    removeTempDir(dir)
  })

  /**
   * A key in use on both workers, revoked by `revoke` at one of them: a
   * second after its answer, requests spread over both workers are all
   * refused. Each case polls a path of its own, so its log lines say which
   * workers answered it.
   */
  async function assertRevokedEverywhere (name: string, path: string, revoke: (token: string) => Promise<Answer>, expected: number): Promise<void> {
    const { token } = await createKey(env, ['--plan', 'enterprise', '--name', name, '--per-minute', '100000', '--per-day', '1000000'])
    const warm = await Promise.all(Array.from({ length: 20 }, async () => await send(server.port, '/v1/pets?limit=1', { headers: bearer(token) })))
    assert.deepEqual(new Set(warm.map(({ status }) => status)), new Set([200]))

    const answer = await revoke(token)
    const answeredAt = Date.now()
    assert.equal(answer.status, expected, answer.text)
    await delay(answeredAt + 1_000 - Date.now())
    const after = await Promise.all(Array.from({ length: 20 }, async () => await send(server.port, path, { headers: bearer(token) })))

    assert.deepEqual(after.map(({ status, text }) => `${status} ${text.includes('"invalid_api_key"') ? 'invalid_api_key' : text}`), Array.from({ length: 20 }, () => '401 invalid_api_key'))
    await server.waitForStdout((stdout) => linesFor(stdout, path) >= 20, 30_000, `a line for each of the 20 requests to ${path}`)
    const workers = new Set([...server.stdout.matchAll(new RegExp(`"worker":(\\d+).*"url":"${path.replace(/[?]/g, '\\?')}"`, 'g'))].map((match) => match[1]))
    assert.equal(workers.size, 2, `the refusals came from workers ${[...workers].join(', ')}`)
  }

  it('When a signed secret-scanning report names a key in use on both workers, then a second after its answer both workers refuse the key', async () => {
    await assertRevokedEverywhere('reported', '/v1/pets?limit=2', async (token) => {
      const body = report([token])
      return await send(server.port, '/v1/secret-scanning', { method: 'POST', headers: { 'content-type': 'application/json', ...github.sign(body) }, body })
    }, 200)
  })

  it('When a key\'s holder revokes its token, then a second after the answer both workers refuse the key', async () => {
    await assertRevokedEverywhere('given up', '/v1/pets?limit=3', async (token) => await send(server.port, '/v1/credentials/revoke', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials: [token] })
    }), 202)
  })
})

/** The POSIX locks any process holds on `file` (Linux's /proc/locks); undefined where the system does not say. */
function posixLocksOn (file: string): number | undefined {
  if (!existsSync('/proc/locks')) return undefined
  const inode = statSync(file).ino
  return readFileSync('/proc/locks', 'utf8').split('\n').filter((line) => line.includes(' POSIX ') && line.split(/\s+/).some((field) => field.endsWith(`:${inode}`))).length
}

/**
 * Opens `file`, reads it and closes it, in a process of its own. Python's
 * sqlite3 is such a reader: on close it deletes a WAL no other process holds
 * a lock on (better-sqlite3's close, in the same case, leaves it).
 */
function readOnceFromOutside (file: string): void {
  const script = 'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute("SELECT count(*) FROM pets").fetchone()\nc.close()'
  const python = spawnSync('python3', ['-c', script, file], { encoding: 'utf8' })
  if (python.error === undefined) {
    assert.equal(python.status, 0, python.stderr)
    return
  }
  const reader = new Database(file)
  reader.prepare('SELECT count(*) FROM pets').get()
  reader.close()
}

describe('the start and the store of two workers', { skip: !SHARES_PORTS && 'this Node.js cannot share a port between threads', timeout: 120_000 }, () => {
  it('When clients connect over and over while it starts, then it starts, says `listening on` and answers them (regression: a connection to the held port hung the start for good)', async () => {
    // Arrange: a probe every 50 ms, each with a 1 s timeout, as a load balancer's health check would.
    const dir = makeTempDir()
    const port = await freePort()
    const server = new ServerProcess({ DATABASE_URL: sqliteUrl(dir), HOST: '127.0.0.1', PORT: String(port), WORKERS: '2' })
    const probing = { on: true, refused: 0, answered: 0 }
    const probes = (async () => {
      while (probing.on) {
        try {
          const { status } = await send(port, '/healthz', { timeoutMs: 1_000 })
          if (status === 200) probing.answered++
        } catch {
          probing.refused++
        }
        await delay(50)
      }
    })()
    try {
      // Act
      await server.waitForListening(30_000)
      await pollUntil(async () => (probing.answered > 0 ? true : undefined), { ms: 10_000, every: 50, what: 'a probe answered 200' })

      // Assert
      assert.equal(server.stdout.match(/listening on http:/g)?.length, 1)
      assert.ok(probing.refused > 0, 'no probe came while the service started: the test tried nothing')
    } finally {
      probing.on = false
      await probes
      await server.dispose()
      removeTempDir(dir)
    }
  })

  it('When it is asked to stop while its workers start, then it exits within the grace', async () => {
    // Arrange
    const dir = makeTempDir()
    const server = new ServerProcess({ DATABASE_URL: sqliteUrl(dir), HOST: '127.0.0.1', PORT: '0', WORKERS: '2' })
    try {
      await server.waitForStdout((stdout) => stdout.includes('"worker":'), 30_000, 'a worker\'s first line')

      // Act
      server.signal('SIGTERM')
      const exit = await server.waitForExit(10_000)

      // Assert
      assert.equal(exit.code, 0, server.stdout + server.stderr)
    } finally {
      await server.dispose()
      removeTempDir(dir)
    }
  })

  it('When another program reads the database while it runs, then every animal acknowledged is on disk after kill -9 (regression: a worker closing a descriptor of the file dropped the process\'s locks, and the reader deleted the WAL)', async () => {
    // Arrange
    const dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const { token } = await createKey(env, ['--plan', 'pro', '--name', 'durable'])
    const server = await startServer({ ...env, WORKERS: '2' }, 30_000)
    try {
      const locks = posixLocksOn(databaseFile(dir))
      if (locks !== undefined) assert.ok(locks > 0, 'the service holds no lock on its database file')
      // Act: a reader in another process, as an operator's sqlite3 shell or a backup tool.
      readOnceFromOutside(databaseFile(dir))
      const answers = await Promise.all([1, 2, 3].map(async (n) => await send(server.port, '/v1/pets', {
        method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: newPetJson({ name: `kept-${n}` })
      })))
      assert.deepEqual(answers.map(({ status }) => status), [201, 201, 201], answers.map(({ text }) => text).join('\n'))
      server.signal('SIGKILL')
      await server.waitForExit(10_000)

      // Assert
      const after = new Database(databaseFile(dir), { readonly: true })
      try {
        const names = after.prepare<[], string>("SELECT name FROM pets WHERE name LIKE 'kept-%' ORDER BY name").pluck().all()
        assert.deepEqual(names, ['kept-1', 'kept-2', 'kept-3'])
      } finally {
        after.close()
      }
    } finally {
      await server.dispose()
      removeTempDir(dir)
    }
  })
})
