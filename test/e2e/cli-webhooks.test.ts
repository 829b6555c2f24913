// `petstore webhooks …` as operators and their scripts meet it: the program
// main.ts runs (run here, test/support/cli-here.ts; test/e2e/cli.test.ts
// holds what the process adds) on the server's database, judged by exit
// status and output,
// with the admin API's rules (webhooks/manage.ts) and the deliveries the
// dispatcher writes.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { Dispatcher } from '../../src/webhooks/dispatcher.js'
import { listDeliveries } from '../../src/webhooks/manage.js'
import pino from 'pino'
import { runHere, runHereOk } from '../support/cli-here.js'
import { makeTempDir, pollUntil, removeTempDir, sqliteUrl, type CliResult } from '../support/process.js'
import { WebhookReceiver } from '../support/webhook-receiver.js'

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/

function lines (text: string): string[] {
  return text.split('\n').filter((line) => line !== '')
}

function assertOneLineFailure (result: CliResult, code: number): string {
  const output = `stdout: ${result.stdout}\nstderr: ${result.stderr}`
  assert.equal(result.code, code, output)
  assert.equal(result.stdout, '', output)
  assert.doesNotMatch(result.stderr, /^\s+at /m, output)
  assert.match(result.stderr, /^petstore: /, output)
  return lines(result.stderr)[0] ?? ''
}

interface WebhookJson { id: number, url: string, events: string[] | null, description: string, enabled: boolean, secret?: string }

describe('petstore webhooks', { timeout: 90_000 }, () => {
  let dir = ''
  let env: Record<string, string> = {}

  before(() => {
    dir = makeTempDir()
    env = { DATABASE_URL: sqliteUrl(dir) }
  })
  after(() => { removeTempDir(dir) })

  it('When `webhooks create` is run, then it prints the secret alone on the last line, and `list`, `show` have the endpoint without it', async () => {
    // Act
    const created = await runHereOk(['webhooks', 'create', '--url', 'https://partner.example.com/hooks', '--events', 'pet.created,key.revoked', '--description', 'partner app'], env)
    const listed = await runHereOk(['webhooks', 'list', '--json'], env)
    const table = await runHereOk(['webhooks', 'list'], env)

    // Assert
    const secret = lines(created.stdout).at(-1) ?? ''
    assert.match(secret, SECRET)
    assert.match(created.stdout, /^Created webhook endpoint (\d+) for https:\/\/partner\.example\.com\/hooks: events pet\.created, key\.revoked\.\n/)
    const [webhook] = JSON.parse(listed.stdout) as WebhookJson[]
    assert.ok(webhook !== undefined)
    assert.deepEqual({ ...webhook, createdAt: undefined, updatedAt: undefined }, {
      id: webhook.id, url: 'https://partner.example.com/hooks', events: ['pet.created', 'key.revoked'], description: 'partner app', enabled: true, previousSecretExpiresAt: null, disabledReason: null, disabledAt: null, createdAt: undefined, updatedAt: undefined
    })
    assert.ok(!listed.stdout.includes(secret) && !table.stdout.includes(secret), 'the secret was shown again')
    assert.match(table.stdout, /^ID +URL +EVENTS +ENABLED +DESCRIPTION +CREATED\n/)
    const shown = await runHereOk(['webhooks', 'show', String(webhook.id)], env)
    assert.match(shown.stdout, /^id: \d+\nurl: https:\/\/partner\.example\.com\/hooks\nevents: pet\.created,key\.revoked\nenabled: yes\n/)
  })

  it('When `webhooks create --json` is run, then one object carries the endpoint and its secret', async () => {
    // Act
    const created = await runHereOk(['webhooks', 'create', '--url', 'https://b.example.com/h', '--json'], env)

    // Assert
    const webhook = JSON.parse(created.stdout) as WebhookJson
    assert.match(webhook.secret ?? '', SECRET)
    assert.equal(webhook.events, null)
    assert.equal(lines(created.stdout).length, 1)
  })

  it('When a URL breaks a rule of the admin API, then `create` and `update` exit 1 naming --url in its words', async () => {
    // Act
    const plain = await runHere(['webhooks', 'create', '--url', 'http://partner.example.com/h'], env)
    const loopback = await runHere(['webhooks', 'create', '--url', 'https://127.0.0.1/h'], env)
    const update = await runHere(['webhooks', 'update', '1', '--url', 'https://user:pw@partner.example.com/h'], env)

    // Assert
    assert.equal(assertOneLineFailure(plain, 1), 'petstore: --url must be an https:// URL')
    assert.match(assertOneLineFailure(loopback, 1), /^petstore: --url must be of a public address/)
    assert.equal(assertOneLineFailure(update, 1), 'petstore: --url must not carry a user name or password')
  })

  it('When WEBHOOK_ALLOW_PRIVATE=true, then an http:// URL of a loopback address is taken, as the server takes it', async () => {
    // Act
    const created = await runHereOk(['webhooks', 'create', '--url', 'http://127.0.0.1:9/h', '--json'], { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' })

    // Assert
    assert.equal((JSON.parse(created.stdout) as WebhookJson).url, 'http://127.0.0.1:9/h')
  })

  it('When the command line is wrong, then it exits 2: an unknown type, a type twice, --enabled not a boolean, nothing to change', async () => {
    for (const args of [
      ['webhooks', 'create', '--url', 'https://a.example.com', '--events', 'pet.eaten'],
      ['webhooks', 'create', '--url', 'https://a.example.com', '--events', 'pet.created,pet.created'],
      ['webhooks', 'create'],
      ['webhooks', 'update', '1', '--enabled', 'yes'],
      ['webhooks', 'update', '1'],
      ['webhooks', 'show', 'x']
    ]) {
      // Act
      const result = await runHere(args, env)

      // Assert
      assertOneLineFailure(result, 2)
    }
  })

  it('When `webhooks update` changes every field, then `show --json` has them, and `--events all` means every type', async () => {
    // Arrange
    const { id } = JSON.parse((await runHereOk(['webhooks', 'create', '--url', 'https://c.example.com/h', '--events', 'pet.created', '--json'], env)).stdout) as WebhookJson

    // Act
    const updated = await runHereOk(['webhooks', 'update', String(id), '--url', 'https://d.example.com/h', '--events', 'key.created', '--description', 'moved', '--enabled', 'false'], env)
    const shown = JSON.parse((await runHereOk(['webhooks', 'show', String(id), '--json'], env)).stdout) as WebhookJson
    const all = JSON.parse((await runHereOk(['webhooks', 'update', String(id), '--events', 'all', '--enabled', 'true', '--json'], env)).stdout) as WebhookJson

    // Assert
    assert.match(updated.stdout, new RegExp(`^Updated webhook endpoint ${id}\\.\\n`))
    assert.deepEqual([shown.url, shown.events, shown.description, shown.enabled], ['https://d.example.com/h', ['key.created'], 'moved', false])
    assert.deepEqual([all.events, all.enabled], [null, true])
  })

  it('When `webhooks delete` is run, then the endpoint is gone and a second delete exits 1 saying no endpoint has the id', async () => {
    // Arrange
    const { id } = JSON.parse((await runHereOk(['webhooks', 'create', '--url', 'https://e.example.com/h', '--json'], env)).stdout) as WebhookJson

    // Act
    const deleted = await runHereOk(['webhooks', 'delete', String(id)], env)
    const again = await runHere(['webhooks', 'delete', String(id)], env)
    const shown = await runHere(['webhooks', 'show', String(id)], env)

    // Assert
    assert.equal(deleted.stdout, `Deleted webhook endpoint ${id}.\n`)
    assert.equal(assertOneLineFailure(again, 1), `petstore: No webhook endpoint has the id ${id}.`)
    assert.equal(assertOneLineFailure(shown, 1), `petstore: No webhook endpoint has the id ${id}.`)
  })

  it('When an endpoint has had deliveries, then `webhooks deliveries` lists them as the admin API does', async () => {
    // Arrange: an endpoint to a real receiver that refuses, and one event delivered to it by a dispatcher on the same file.
    const receiver = await new WebhookReceiver().listen()
    receiver.answers.push(500)
    const privateEnv = { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' }
    const { id } = JSON.parse((await runHereOk(['webhooks', 'create', '--url', receiver.url, '--events', 'key.created', '--json'], privateEnv)).stdout) as WebhookJson
    await runHereOk(['keys', 'create', '--plan', 'free'], env)
    const storage = openSqlite(env.DATABASE_URL ?? '')
    const dispatcher = new Dispatcher({ storage, logger: pino({ level: 'silent' }), allowPrivate: true })
    try {
      dispatcher.start()
      // Until its outcome is written: a dispatcher stopped before abandons the attempt.
      await pollUntil(async () => (await listDeliveries(storage, id, null, 1))[0]?.lastStatus === 500 ? true : undefined, { ms: 10_000, every: 50, what: 'a delivery answered' })
    } finally {
      await dispatcher.stop()
      await storage.close()
      await receiver.close()
    }

    // Act
    const json = await runHereOk(['webhooks', 'deliveries', String(id), '--json'], env)
    const table = await runHereOk(['webhooks', 'deliveries', String(id)], env)

    // Assert
    const [delivery] = JSON.parse(json.stdout) as Array<{ webhookId: string, type: string, state: string, attempts: number, lastStatus: number, lastError: string }>
    assert.ok(delivery !== undefined, json.stdout)
    assert.deepEqual([delivery.type, delivery.state, delivery.attempts, delivery.lastStatus], ['key.created', 'pending', 1, 500])
    assert.match(delivery.lastError, /^HTTP 500/)
    assert.match(table.stdout, new RegExp(`^WEBHOOK-ID .*\\n${delivery.webhookId} +key\\.created `))
  })

  it('When `webhooks roll-secret`, `test` and `resend` are run, then the new secret is alone on the last line, the test event is pending, and a pending delivery is refused', async () => {
    // Arrange
    const { id, secret } = JSON.parse((await runHereOk(['webhooks', 'create', '--url', 'https://f.example.com/h', '--json'], env)).stdout) as WebhookJson

    // Act
    const rolled = await runHereOk(['webhooks', 'roll-secret', String(id), '--expire-current-in', '12h'], env)
    const shown = JSON.parse((await runHereOk(['webhooks', 'show', String(id), '--json'], env)).stdout) as WebhookJson & { previousSecretExpiresAt: string | null }
    const tooLong = await runHere(['webhooks', 'roll-secret', String(id), '--expire-current-in', '8d'], env)
    const tested = JSON.parse((await runHereOk(['webhooks', 'test', String(id), '--json'], env)).stdout) as { webhookId: string, type: string, state: string }
    // No service runs: the test event's delivery stays pending.
    const pending = await runHere(['webhooks', 'resend', String(id), tested.webhookId], env)
    const malformed = await runHere(['webhooks', 'resend', String(id), '42'], env)

    // Assert
    const newSecret = lines(rolled.stdout).at(-1) ?? ''
    assert.match(newSecret, SECRET)
    assert.notEqual(newSecret, secret)
    assert.match(rolled.stdout, /the secret before it signs too until \d{4}-/)
    assert.ok(shown.previousSecretExpiresAt !== null && Date.parse(shown.previousSecretExpiresAt) > Date.now() + 11 * 3_600_000)
    assertOneLineFailure(tooLong, 2)
    assert.deepEqual([tested.type, tested.state], ['webhook.test', 'pending'])
    assert.match(assertOneLineFailure(pending, 1), /is still to be tried; only a succeeded or failed delivery can be sent again/)
    assertOneLineFailure(malformed, 2)
  })
})
