// Every change to a key holds on every instance within one second (docs/KEYS.md:
// The admin API, Leaked tokens): three instances on one PostgreSQL database
// and one Redis, a key changed through the functions the `petstore keys`
// commands and the admin API call, or revoked by a secret scanner's signed
// report or its holder at one instance, and each instance polled before,
// during and after.
//
// What is asserted is the promise itself: no instance answers with the old
// state a request sent a second or more after the change returned. A slow
// answer to a request sent earlier does not count against it, so a busy
// machine cannot fail the test; only a state kept too long can. When each
// instance showed the change is measured and printed.
import { after, before, beforeEach, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { openPostgres } from '../../src/db/postgres/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { issueKey, revokeKey, rollKey, updateKey } from '../../src/keys/manage.js'
import { bearer, newPetJson } from '../support/fixtures.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import { startServers, type ServerProcess } from '../support/process.js'
import { OwnRedisServer } from '../support/redis.js'
import { keyListFile, makeScanner, report } from '../support/scanner.js'

/** The promise: a change holds on every instance within this long. */
const WITHIN_MS = 1_000
/** Between two requests to one instance, as the revocation test in scale-out.test.ts polls. */
const POLL_EVERY_MS = 50
/** How long the instances are polled before the change, so that every one has the key's old state cached. */
const WARM_MS = 300
/** A watch that has not ended by then has failed, whatever the machine's load. */
const WATCH_FOR_MS = 15_000
const REQUEST_TIMEOUT_MS = 10_000

/** What an instance answered: the key's state before the change, after it, or anything else (a failure). */
type State = 'before' | 'after' | { unexpected: string }

interface Answer {
  instance: number
  /** Epoch ms at which the request was sent, and its answer read. */
  sentAt: number
  receivedAt: number
  state: State
}

interface Response {
  status: number
  code: string | undefined
  message: string | undefined
  limit: string | null
}

async function send (server: ServerProcess, path: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(`${server.origin}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  const text = await response.text()
  const body = response.ok ? {} : JSON.parse(text) as { code?: string, message?: string }
  return { status: response.status, code: body.code, message: body.message, limit: response.headers.get('x-ratelimit-limit') }
}

function describeResponse (response: Response): string {
  return `${response.status} ${response.code ?? ''} ${response.message ?? ''} (X-RateLimit-Limit ${String(response.limit)})`
}

/**
 * Polls every instance with `probe` from WARM_MS before `change` until each
 * has answered a request sent at or after the instant `change` gives (the
 * bound), then gives every answer.
 */
async function watch (instances: ServerProcess[], probe: (server: ServerProcess) => Promise<State>, change: () => Promise<number>): Promise<Answer[]> {
  const answers: Answer[] = []
  let bound: number | undefined
  const deadline = Date.now() + WATCH_FOR_MS
  const pollers = instances.map(async (server, instance) => {
    for (;;) {
      const sentAt = Date.now()
      const state = await probe(server)
      answers.push({ instance, sentAt, receivedAt: Date.now(), state })
      if (bound !== undefined && sentAt >= bound) return
      if (Date.now() > deadline) throw new Error(`instance ${instance} was still being watched ${WATCH_FOR_MS} ms on`)
      await delay(POLL_EVERY_MS)
    }
  })
  try {
    await delay(WARM_MS)
    bound = await change()
  } finally {
    // However the change went, the pollers end before the test does.
    bound ??= Date.now()
    await Promise.all(pollers)
  }
  return answers
}

/** Per instance: the last request answered with the old state and the first answer of the new state for good, in ms from `origin`. */
function timesOf (answers: Answer[], instances: number, origin: number): Array<{ lastBeforeSent: number | undefined, shownAt: number | undefined }> {
  return Array.from({ length: instances }, (_, instance) => {
    const own = answers.filter((answer) => answer.instance === instance).sort((a, b) => a.sentAt - b.sentAt)
    const lastBefore = own.filter((answer) => answer.state === 'before').at(-1)
    const firstAfter = own.find((answer, i) => own.slice(i).every((later) => later.state === 'after'))
    return {
      lastBeforeSent: lastBefore === undefined ? undefined : lastBefore.sentAt - origin,
      shownAt: firstAfter === undefined ? undefined : firstAfter.receivedAt - origin
    }
  })
}

/** The assertions every change shares, and its figures printed. */
function assertHeldEverywhere (t: TestContext, what: string, answers: Answer[], instances: number, { origin, bound, from = 'the change' }: { origin: number, bound: number, from?: string }): void {
  const times = timesOf(answers, instances, origin)
  const shown = times.map(({ shownAt }) => shownAt)
  const all = shown.every((ms) => ms !== undefined) ? `${Math.max(...shown)} ms` : 'never'
  t.diagnostic(`${what}: shown on all ${instances} instances ${all} after ${from} (each: ${shown.map((ms) => ms ?? 'never').join(', ')} ms); ` +
    `last old answer to a request sent at ${times.map(({ lastBeforeSent }) => lastBeforeSent ?? '-').join(', ')} ms; ${answers.length} requests`)
  assert.deepEqual(answers.filter((answer) => typeof answer.state === 'object').map((answer) => answer.state), [], 'answers of neither state')
  const late = answers.filter((answer) => answer.sentAt >= bound && answer.state !== 'after')
  assert.deepEqual(late.map((answer) => `instance ${answer.instance}, sent ${answer.sentAt - origin} ms on`), [],
    `old state answered to requests sent ${bound - origin} ms or more after ${from}`)
  for (let instance = 0; instance < instances; instance++) {
    assert.ok(answers.some((answer) => answer.instance === instance && answer.state === 'before'), `instance ${instance} never showed the state before the change`)
    assert.ok(answers.some((answer) => answer.instance === instance && answer.sentAt >= bound), `instance ${instance} was not asked after the bound`)
  }
}

describe('changes to a key, on three instances sharing one PostgreSQL database and one Redis', { timeout: 180_000 }, () => {
  const instances: ServerProcess[] = []
  const github = makeScanner()
  let redis: OwnRedisServer | undefined
  let storage: Storage | undefined
  before(async () => {
    redis = await OwnRedisServer.start()
    // Each instance believes the test's X-Forwarded-For (see `from`).
    // A scanner's key pair stands in for GitHub's, its public key in a file as for a machine that cannot reach GitHub.
    const env = { DATABASE_URL: await freshPostgresDatabase(), REDIS_URL: redis.url, DATABASE_POOL_SIZE: '4', TRUST_PROXY: '127.0.0.1', SECRET_SCANNING_KEYS_URL: keyListFile(github) }
    instances.push(...await startServers(3, env))
    // As the `petstore keys` commands do: the same functions, on the same database.
    storage = await openPostgres(env.DATABASE_URL, { poolSize: 2 })
  })
  after(async () => {
    await Promise.all(instances.map(async (server) => await server.dispose()))
    await storage?.close()
    await redis?.stop()
  })

  /** An enterprise key with room for every request the watches send; its id and token. */
  async function newKey (): Promise<{ id: number, token: string }> {
    const key = await issueKey(storage as Storage, { plan: 'enterprise', name: 'changed', perMinute: 100_000, perDay: 1_000_000, environment: 'production', now: Date.now() })
    return { id: key.id, token: key.token }
  }

  // A refused token is counted against its client's address, 60 a minute:
  // each test sends from addresses of its own, one per instance, so that
  // the refusals of one test do not spend the next one's.
  let testNumber = 0
  beforeEach(() => { testNumber++ })
  const from = (server: ServerProcess): Record<string, string> => ({ 'x-forwarded-for': `198.51.${testNumber}.${instances.indexOf(server) + 1}` })

  const list = async (server: ServerProcess, token: string): Promise<Response> =>
    await send(server, '/v1/pets?limit=1', { headers: { ...bearer(token), ...from(server) } })

  it('When a key in use on every instance is revoked, then within a second every instance refuses it', async (t) => {
    // Arrange: unlike a key revoked before its first use, its lookup is cached on every instance.
    const { id, token } = await newKey()
    let changedAt = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const response = await list(server, token)
      if (response.status === 200) return 'before'
      if (response.status === 401 && response.code === 'invalid_api_key') return 'after'
      return { unexpected: describeResponse(response) }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      await revokeKey(storage as Storage, id, Date.now())
      changedAt = Date.now()
      return changedAt + WITHIN_MS
    })

    // Assert
    assertHeldEverywhere(t, 'revocation', answers, instances.length, { origin: changedAt, bound: changedAt + WITHIN_MS })
  })

  /** Polls with the key's token: 200 before, 401 invalid_api_key after. */
  const revokedProbe = (token: string) => async (server: ServerProcess): Promise<State> => {
    const response = await list(server, token)
    if (response.status === 200) return 'before'
    if (response.status === 401 && response.code === 'invalid_api_key') return 'after'
    return { unexpected: describeResponse(response) }
  }

  it('When a signed secret-scanning report naming a key in use reaches one instance, then within a second every instance refuses the key', async (t) => {
    // Arrange
    const { token } = await newKey()
    const body = report([token])
    let answeredAt = 0

    // Act: the report to the last instance; the bound counts from its answer, after which the key is revoked.
    const answers = await watch(instances, revokedProbe(token), async () => {
      const response = await fetch(`${instances[2]?.origin ?? ''}/v1/secret-scanning`, {
        method: 'POST', headers: { 'content-type': 'application/json', ...github.sign(body), ...from(instances[2] as ServerProcess) }, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
      })
      answeredAt = Date.now()
      assert.equal(response.status, 200, await response.text())
      return answeredAt + WITHIN_MS
    })

    // Assert
    assertHeldEverywhere(t, 'revocation by a secret-scanning report', answers, instances.length, { origin: answeredAt, bound: answeredAt + WITHIN_MS, from: 'the report\'s answer' })
  })

  it('When a key\'s holder revokes its token at one instance, then within a second of the answer every instance refuses the key', async (t) => {
    // Arrange
    const { token } = await newKey()
    let answeredAt = 0

    // Act: the revocation is made after its 202; the promise still counts from the answer.
    const answers = await watch(instances, revokedProbe(token), async () => {
      const response = await fetch(`${instances[1]?.origin ?? ''}/v1/credentials/revoke`, {
        method: 'POST', headers: { 'content-type': 'application/json', ...from(instances[1] as ServerProcess) }, body: JSON.stringify({ credentials: [token] }), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
      })
      answeredAt = Date.now()
      assert.equal(response.status, 202, await response.text())
      return answeredAt + WITHIN_MS
    })

    // Assert
    assertHeldEverywhere(t, 'revocation by the token\'s holder', answers, instances.length, { origin: answeredAt, bound: answeredAt + WITHIN_MS, from: 'the revocation\'s answer' })
  })

  it('When a key is rolled with an overlap of 0, then within a second every instance refuses its old token, and accepts the new one at once', async (t) => {
    // Arrange
    const { id, token: old } = await newKey()
    let current: string | undefined
    let rolledAt = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const token = current
      const [onOld, onNew] = await Promise.all([list(server, old), token === undefined ? undefined : list(server, token)])
      if (onNew !== undefined && onNew.status !== 200) return { unexpected: `new token: ${describeResponse(onNew)}` }
      if (onOld.status === 200) return 'before'
      if (onOld.status === 401 && onOld.code === 'invalid_api_key' && token !== undefined) return 'after'
      return { unexpected: `old token: ${describeResponse(onOld)}` }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      current = (await rollKey(storage as Storage, id, 0, Date.now())).token
      rolledAt = Date.now()
      return rolledAt + WITHIN_MS
    })

    // Assert
    assert.ok(current !== undefined)
    assertHeldEverywhere(t, 'roll (overlap 0)', answers, instances.length, { origin: rolledAt, bound: rolledAt + WITHIN_MS })
  })

  it('When a key is rolled with an overlap of 2 s, then every instance refuses the old token once the overlap has ended (regression: a rolled-away token is refused after its overlap on every instance)', async (t) => {
    // Arrange
    const { id, token: old } = await newKey()
    let rolledAt = 0
    let overlapEnd = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const onOld = await list(server, old)
      if (onOld.status === 200) return 'before'
      if (onOld.status === 401 && onOld.code === 'invalid_api_key') return 'after'
      return { unexpected: describeResponse(onOld) }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      const rolled = await rollKey(storage as Storage, id, 2, Date.now())
      rolledAt = Date.now()
      overlapEnd = Date.parse(rolled.previousTokenExpiresAt ?? '')
      // The roll itself holds within a second; the overlap's end from then on.
      return Math.max(overlapEnd, rolledAt + WITHIN_MS)
    })

    // Assert
    const acceptedDuring = answers.filter((answer) => answer.sentAt > rolledAt && answer.receivedAt < overlapEnd && answer.state === 'before').length
    t.diagnostic(`the old token was accepted ${acceptedDuring} times during its overlap`)
    assertHeldEverywhere(t, 'end of a 2 s overlap', answers, instances.length, { origin: overlapEnd, bound: Math.max(overlapEnd, rolledAt + WITHIN_MS), from: 'the overlap\'s end' })
  })

  it('When a key is given an expiry a second ahead, then from then on every instance refuses it with 401 saying it expired', async (t) => {
    // Arrange
    const { id, token } = await newKey()
    let changedAt = 0
    let expiresAt = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const response = await list(server, token)
      if (response.status === 200) return 'before'
      if (response.status === 401 && response.code === 'invalid_api_key' && /expired/.test(response.message ?? '')) return 'after'
      return { unexpected: describeResponse(response) }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      expiresAt = Date.now() + 1_000
      await updateKey(storage as Storage, id, { expiresAt }, Date.now())
      changedAt = Date.now()
      return Math.max(expiresAt, changedAt + WITHIN_MS)
    })

    // Assert
    assertHeldEverywhere(t, 'expiry', answers, instances.length, { origin: expiresAt, bound: Math.max(expiresAt, changedAt + WITHIN_MS), from: 'the expiry' })
  })

  it('When a key loses pets:write, then within a second every instance answers its createPet with 403 insufficient_scope', async (t) => {
    // Arrange
    const { id, token } = await newKey()
    let changedAt = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const response = await send(server, '/v1/pets', { method: 'POST', headers: { ...bearer(token), ...from(server), 'content-type': 'application/json' }, body: newPetJson({ name: 'scoped' }) })
      if (response.status === 201) return 'before'
      if (response.status === 403 && response.code === 'insufficient_scope') return 'after'
      return { unexpected: describeResponse(response) }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      await updateKey(storage as Storage, id, { scopes: ['pets:read'] }, Date.now())
      changedAt = Date.now()
      return changedAt + WITHIN_MS
    })

    // Assert
    assertHeldEverywhere(t, 'scopes', answers, instances.length, { origin: changedAt, bound: changedAt + WITHIN_MS })
  })

  it('When a key\'s per-minute limit is changed, then within a second every instance shows the new X-RateLimit-Limit', async (t) => {
    // Arrange
    const { id, token } = await newKey()
    let changedAt = 0
    const probe = async (server: ServerProcess): Promise<State> => {
      const response = await list(server, token)
      if (response.status === 200 && response.limit === '100000') return 'before'
      if (response.status === 200 && response.limit === '90000') return 'after'
      return { unexpected: describeResponse(response) }
    }

    // Act
    const answers = await watch(instances, probe, async () => {
      await updateKey(storage as Storage, id, { perMinute: 90_000 }, Date.now())
      changedAt = Date.now()
      return changedAt + WITHIN_MS
    })

    // Assert
    assertHeldEverywhere(t, 'per-minute limit', answers, instances.length, { origin: changedAt, bound: changedAt + WITHIN_MS })
  })
})
