// The console's webhook endpoints as an operator uses them: `petstore serve`
// with the admin listener on and WEBHOOK_ALLOW_PRIVATE=true (so that it
// delivers to a receiver on 127.0.0.1), the console opened in Chromium and
// signed in, and each thing it does checked where it matters: through the
// admin API, and at a real receiver that verifies what it got with the
// secret the page showed.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import {
  CHANGE_TIMEOUT_MS, STEP_TIMEOUT_MS, adminCall, elsewhere, launchChromium, openTab, signIn, startConsoleServer, type Opened
} from '../support/console.js'
import { makeTempDir, pollUntil, removeTempDir, sqliteUrl, type ServerProcess } from '../support/process.js'
import { WebhookReceiver, verify, type Received } from '../support/webhook-receiver.js'

const ADMIN_TOKEN = 'console-webhooks-Qm3Xv8Ld2Tz6Rk1Pw9'
/** What the page keeps in storage, read in the page (the test is compiled without the browser's types). */
const STORAGE = '({ session: Object.keys(sessionStorage).map((name) => sessionStorage.getItem(name)), local: localStorage.length, cookie: document.cookie })'

interface Webhook {
  id: number
  url: string
  events: string[] | null
  description: string
  enabled: boolean
  previousSecretExpiresAt: string | null
  disabledReason: string | null
  disabledAt: string | null
}
type WithSecret = Webhook & { secret: string }

interface Delivery {
  webhookId: string
  type: string
  state: string
  attempts: number
  lastStatus: number | null
  lastError: string | null
}

describe('The console\'s webhook endpoints, in Chromium', { timeout: 300_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let browser: Browser | undefined
  let context: BrowserContext | undefined
  let env: Record<string, string> = {}
  let adminOrigin = ''
  /** The pages the running test opened, by what each was opened for. */
  let pagesOfTest = new Map<string, Opened>()
  /** The receivers the running test listens with, closed after it. */
  let receivers: WebhookReceiver[] = []

  const adminApi = async <T>(method: string, path: string, body?: unknown): Promise<T> => await adminCall<T>(adminOrigin, ADMIN_TOKEN, method, path, body)

  /** A receiver on 127.0.0.1 for this test alone. */
  async function receiver (): Promise<WebhookReceiver> {
    const listening = await new WebhookReceiver().listen()
    receivers.push(listening)
    return listening
  }

  /** An endpoint made through the admin API, to `to`: its secret is known to the test only. */
  async function endpoint (to: WebhookReceiver, fields: { events?: string[], description?: string } = {}): Promise<WithSecret> {
    return await adminApi<WithSecret>('POST', '/webhooks', { url: to.url, ...fields })
  }

  /** Waits until `to` has received `count` deliveries. */
  async function received (to: WebhookReceiver, count: number, what: string): Promise<Received[]> {
    return await pollUntil(async () => to.received.length >= count ? to.received : undefined, { ms: CHANGE_TIMEOUT_MS, every: 50, what })
  }

  /** The endpoint's deliveries, newest first, as the admin API lists them. */
  async function deliveries (id: number): Promise<Delivery[]> {
    return await adminApi<Delivery[]>('GET', `/webhooks/${id}/deliveries?limit=100`)
  }

  /** Waits until the admin API says every delivery of the endpoint has succeeded, and there are `count`. */
  async function settled (id: number, count: number): Promise<Delivery[]> {
    return await pollUntil(async () => {
      const listed = await deliveries(id)
      return listed.length === count && listed.every((delivery) => delivery.state === 'succeeded') ? listed : undefined
    }, { ms: CHANGE_TIMEOUT_MS, every: 100, what: `${count} deliveries succeeded` })
  }

  /** A fresh tab, signed in, on the list of endpoints (opened from the header, as a person would). */
  async function openWebhooks (label: string): Promise<Opened> {
    assert.ok(context !== undefined, 'the browser was not started')
    const opened = await openTab(context, adminOrigin)
    pagesOfTest.set(label, opened)
    await signIn(opened.page, ADMIN_TOKEN)
    await opened.page.locator('#nav a[href="#/webhooks"]').click()
    await opened.page.locator('#webhook-list-view').waitFor({ state: 'visible' })
    await opened.page.locator('#webhooks tr').first().waitFor()
    return opened
  }

  /** Opens the endpoint's page from the list and waits until it and its deliveries are drawn. */
  async function openEndpoint (page: Page, id: number): Promise<void> {
    await page.locator(`#webhooks tr[data-webhook="${id}"] a`).click()
    await endpointDrawn(page, id)
  }

  async function endpointDrawn (page: Page, id: number): Promise<void> {
    await page.locator(`#webhook[data-webhook="${id}"]`).waitFor()
    await page.locator('#deliveries tr').first().waitFor()
  }

  /** The page's message once it says `what`, whole: it is written when the admin API has answered, which may come after what the test awaited. */
  async function message (page: Page, what: RegExp): Promise<string> {
    const said = page.locator('#webhooks-ok').filter({ hasText: what })
    await said.waitFor()
    return await said.innerText()
  }

  /** The webhook-ids of the deliveries the page lists, in order. */
  async function listed (page: Page): Promise<string[]> {
    return await page.locator('#deliveries tr[data-delivery]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-delivery') ?? ''))
  }

  before(async () => {
    dir = makeTempDir()
    env = { DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE: 'true' }
    const started = await startConsoleServer(env)
    server = started.server
    adminOrigin = started.adminOrigin
    const launched = await launchChromium()
    browser = launched.browser
    context = launched.context
  })

  beforeEach(() => {
    pagesOfTest = new Map()
    receivers = []
  })

  // Every page is held to the same: no error or CSP violation, no failed load, nothing asked of another origin.
  afterEach(async () => {
    for (const listening of receivers) await listening.close()
    const pages = [...pagesOfTest].map(([label, { problems, requested }]) => [label, { problems, elsewhere: elsewhere(adminOrigin, requested) }] as const)
    assert.deepEqual(Object.fromEntries(pages.filter(([, page]) => page.problems.length > 0 || page.elsewhere.length > 0)), {})
  })

  after(async () => {
    await browser?.close().catch(() => undefined)
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When an endpoint is added in the form, then its signing secret is shown once, Copy selects it where there is no clipboard, it verifies the delivery the receiver gets, and Done takes it off the page', async () => {
    // Arrange
    const to = await receiver()
    const { page } = await openWebhooks('add')

    // Act: an endpoint for key.created alone; then a key is made.
    await page.locator('#webhook-create-panel summary').click()
    await page.locator('#webhook-new-url').fill(to.url)
    await page.locator('#webhook-new-events [data-all]').uncheck()
    await page.locator('#webhook-new-events [data-event="key.created"]').check()
    await page.locator('#webhook-new-description').fill('partner app')
    await page.locator('#webhook-create button[type=submit]').click()
    const value = page.locator('#new-secret-value')
    await value.waitFor({ state: 'visible' })
    const secret = (await value.innerText()).trim()
    const id = Number(/endpoint (\d+)/.exec(await page.locator('#new-secret-title').innerText())?.[1])
    await endpointDrawn(page, id)
    await adminApi('POST', '/keys', { plan: 'free', name: 'announced' })
    const [delivery] = await received(to, 1, 'the key.created delivery')
    // Without a clipboard API, as on a page served over plain http from another address than this machine's.
    await page.evaluate('Object.defineProperty(navigator, \'clipboard\', { value: undefined, configurable: true })')
    await page.locator('#new-secret-copy').click()
    await page.locator('#new-secret-copy[data-copied]').waitFor()
    const copied = {
      state: await page.locator('#new-secret-copy').getAttribute('data-copied'),
      label: await page.locator('#new-secret-copy').innerText(),
      selected: await page.evaluate('window.getSelection().toString()')
    }
    const shownDone = await page.locator('#new-secret').isVisible()
    await page.locator('#new-secret-done').click()

    // Assert
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/)
    assert.ok(delivery !== undefined)
    const payload = verify(secret, delivery)
    assert.equal(payload.type, 'key.created')
    const made = await adminApi<Webhook>('GET', `/webhooks/${id}`)
    assert.deepEqual([made.url, made.events, made.description, made.enabled], [to.url, ['key.created'], 'partner app', true])
    assert.equal(await page.locator('[data-fact="events"]').innerText(), 'key.created')
    // Copy falls back to selecting the secret, for the operator's own Ctrl+C.
    assert.deepEqual(copied, { state: 'selected', label: 'Selected: press Ctrl+C', selected: secret })
    // Shown until Done, then nowhere: not in the page, not in storage.
    assert.equal(shownDone, true)
    await page.locator('#new-secret').waitFor({ state: 'hidden' })
    assert.equal(await value.textContent(), '')
    assert.equal(await page.evaluate(`document.documentElement.outerHTML.includes(${JSON.stringify(secret)})`), false)
    assert.deepEqual(await page.evaluate(STORAGE), { session: [ADMIN_TOKEN], local: 0, cookie: '' })
    await page.close()
  })

  it('When the admin API refuses an endpoint, then the form shows its message and nothing is made', async () => {
    // Arrange
    const { page, problems } = await openWebhooks('refused')
    const before = await adminApi<Webhook[]>('GET', '/webhooks?limit=100')

    // Act
    await page.locator('#webhook-create-panel summary').click()
    await page.locator('#webhook-new-url').fill('ftp://partner.example.com/hooks')
    await page.locator('#webhook-create button[type=submit]').click()

    // Assert
    const error = page.locator('#webhook-create-error')
    await pollUntil(async () => (await error.innerText()) !== '' ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the form\'s error' })
    assert.match(await error.innerText(), /url/)
    assert.equal(await page.locator('#new-secret').isHidden(), true)
    assert.deepEqual(await adminApi<Webhook[]>('GET', '/webhooks?limit=100'), before)
    // The refusal, and Chromium's line about it, are the only problems this page had.
    assert.deepEqual([...problems].sort(), [
      'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
      `HTTP 400: ${adminOrigin}/admin/v1/webhooks`
    ].sort())
    problems.length = 0
    await page.close()
  })

  it('When an endpoint is disabled on its page and enabled again, then the admin API has it so each time, and the list shows it', async () => {
    // Arrange
    const made = await endpoint(await receiver(), { description: 'switched' })
    const { page } = await openWebhooks('disable')
    await openEndpoint(page, made.id)

    // Act
    await page.locator('#webhook-toggle').click()
    await page.locator('#webhook-state[data-state="disabled"]').waitFor()
    const disabled = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    await page.locator('a[href="#/webhooks"]').first().click()
    // The list is drawn again from the admin API: until then it may show the row as it was (regression: read at once, it said 'enabled' on a loaded machine).
    await page.locator(`#webhooks tr[data-webhook="${made.id}"] [data-state="disabled"]`).waitFor()
    const listedState = await page.locator(`#webhooks tr[data-webhook="${made.id}"] [data-state]`).getAttribute('data-state')
    await openEndpoint(page, made.id)
    const button = await page.locator('#webhook-toggle').innerText()
    await page.locator('#webhook-toggle').click()
    await page.locator('#webhook-state[data-state="enabled"]').waitFor()
    const enabled = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)

    // Assert
    assert.equal(disabled.enabled, false)
    assert.equal(listedState, 'disabled')
    assert.equal(button, 'Enable')
    assert.equal(enabled.enabled, true)
    assert.equal(await page.locator('#webhook-toggle').innerText(), 'Disable')
    await page.close()
  })

  it('When the service has disabled a failing endpoint, then the list and its page say why and when; enabled again, the reason is gone', async () => {
    // Arrange: one delivery fails (a 500), then five days pass for the store: it disables the endpoint as the service's dispatcher does.
    const to = await receiver()
    to.answers.push(500)
    const made = await endpoint(to)
    await adminApi('POST', `/webhooks/${made.id}/test`)
    await pollUntil(async () => (await deliveries(made.id))[0]?.lastStatus === 500 ? true : undefined, { ms: CHANGE_TIMEOUT_MS, every: 50, what: 'the failed attempt written' })
    const storage = openSqlite(env.DATABASE_URL ?? '')
    try {
      const later = Date.now()
      const disabledNow = await storage.disableFailingEndpoints(later,
        (failing) => `every delivery failed for 5 days, since ${new Date(failing.failingSince ?? later).toISOString()}`, later)
      assert.deepEqual(disabledNow.map((failing) => failing.id), [made.id])
    } finally {
      await storage.close()
    }
    const disabled = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    assert.ok(disabled.disabledReason !== null && disabled.disabledAt !== null)
    const { page } = await openWebhooks('disabled by the service')

    // Act
    const inList = await page.locator(`#webhooks tr[data-webhook="${made.id}"] .disabled-reason`).innerText()
    await openEndpoint(page, made.id)
    const onPage = await page.locator('#webhook-disabled').innerText()
    await page.locator('#webhook-toggle').click()
    await page.locator('#webhook-state[data-state="enabled"]').waitFor()

    // Assert
    const at = `${disabled.disabledAt.slice(0, 16).replace('T', ' ')} UTC`
    assert.equal(inList, `Disabled by the service ${at}: ${disabled.disabledReason}`)
    assert.ok(onPage.startsWith(`Disabled by the service ${at}: ${disabled.disabledReason}.`), onPage)
    assert.match(disabled.disabledReason, /^every delivery failed for 5 days, since \d{4}-/)
    assert.equal(await page.locator('#webhook-disabled').isHidden(), true)
    const enabled = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    assert.deepEqual([enabled.enabled, enabled.disabledReason, enabled.disabledAt], [true, null, null])
    await page.close()
  })

  it('When an endpoint has more deliveries than a page holds, then its page lists the newest 20, and Older the rest, each page asked of the admin API', async () => {
    // Arrange: 25 test events, each delivered.
    const to = await receiver()
    const made = await endpoint(to)
    for (let i = 0; i < 25; i++) await adminApi('POST', `/webhooks/${made.id}/test`)
    await received(to, 25, '25 deliveries')
    const all = await settled(made.id, 25)
    const { page } = await openWebhooks('deliveries')
    const asked: string[] = []
    page.on('request', (request) => { if (request.url().includes('/deliveries')) asked.push(request.url().replace(adminOrigin, '')) })

    // Act
    await openEndpoint(page, made.id)
    const first = await listed(page)
    const row = await page.locator(`#deliveries tr[data-delivery="${first[0] ?? ''}"] td`).allInnerTexts()
    await page.locator('#deliveries-next').click()
    await pollUntil(async () => (await listed(page)).length === 5 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the older page' })
    const second = await listed(page)
    const olderDisabled = await page.locator('#deliveries-next').isDisabled()
    await page.locator('#deliveries-prev').click()
    await pollUntil(async () => (await listed(page)).length === 20 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the newest page again' })

    // Assert
    assert.deepEqual([...first, ...second], all.map((delivery) => delivery.webhookId))
    assert.equal(olderDisabled, true)
    assert.deepEqual(await listed(page), first)
    // Event id, type, when made, state, attempts, last answer, next attempt, and a resend.
    assert.equal(row[0], first[0])
    assert.equal(row[1], 'webhook.test')
    assert.match(row[2] ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
    assert.deepEqual(row.slice(3, 8), ['succeeded', '1', 'HTTP 204', '—', 'Resend'])
    // Paged by the admin API, 20 at a time: never everything at once.
    assert.equal(asked.length, 3, asked.join('\n'))
    assert.ok(asked.every((path) => path.startsWith(`/admin/v1/webhooks/${made.id}/deliveries?limit=20`)), asked.join('\n'))
    assert.match(asked[1] ?? '', /&cursor=\d+$/)
    await page.close()
  })

  it('When a delivery is resent and a test event sent from the endpoint\'s page, then the receiver gets both, signed with the endpoint\'s secret', async () => {
    // Arrange: one test event, delivered.
    const to = await receiver()
    const made = await endpoint(to)
    const { webhookId } = await adminApi<Delivery>('POST', `/webhooks/${made.id}/test`)
    await received(to, 1, 'the first delivery')
    await settled(made.id, 1)
    const { page } = await openWebhooks('resend and test')
    await openEndpoint(page, made.id)

    // Act
    await page.locator(`#deliveries [data-resend="${webhookId}"]`).click()
    const [, again] = await received(to, 2, 'the delivery sent again')
    const resentSaid = await message(page, /is pending again/)
    await page.locator('#webhook-test').click()
    const [, , test] = await received(to, 3, 'the test event')

    // Assert
    assert.ok(again !== undefined && test !== undefined)
    assert.equal(String(again.headers['webhook-id']), webhookId)
    assert.equal(verify(made.secret, again).type, 'webhook.test')
    assert.match(resentSaid, new RegExp(`^${webhookId} is pending again`))
    const testId = String(test.headers['webhook-id'])
    assert.notEqual(testId, webhookId)
    const payload = verify(made.secret, test)
    assert.deepEqual([payload.type, payload.data.endpointId], ['webhook.test', made.id])
    assert.match(await message(page, /^Test event \S+ written/), new RegExp(`^Test event ${testId} written`))
    assert.equal((await listed(page))[0], testId)
    const [newest, resent] = await settled(made.id, 2)
    assert.deepEqual([newest?.webhookId, resent?.webhookId, resent?.attempts], [testId, webhookId, 2])
    await page.close()
  })

  it('When the secret is rolled, then the dialog says what a roll does, a day unless changed; cancelled, nothing changes; confirmed, the new secret is shown once and a delivery verifies with it and with the old one', async () => {
    // Arrange
    const to = await receiver()
    const made = await endpoint(to)
    const { page } = await openWebhooks('roll')
    await openEndpoint(page, made.id)

    // Act: opened and cancelled, then opened and confirmed with the overlap offered; then a test event.
    await page.locator('#webhook-roll').click()
    await page.locator('#webhook-roll-dialog').waitFor({ state: 'visible' })
    const offered = await page.locator('#webhook-roll-overlap').inputValue()
    const summary = await page.locator('#webhook-roll-summary').innerText()
    await page.locator('#webhook-roll-cancel').click()
    await page.locator('#webhook-roll-dialog').waitFor({ state: 'hidden' })
    const afterCancel = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    await page.locator('#webhook-roll').click()
    await page.locator('#webhook-roll-confirm').click()
    const value = page.locator('#new-secret-value')
    await value.waitFor({ state: 'visible' })
    const secret = (await value.innerText()).trim()
    const title = await page.locator('#new-secret-title').innerText()
    await page.locator('#new-secret-done').click()
    await page.locator('#webhook-test').click()
    const [delivery] = await received(to, 1, 'the test event after the roll')

    // Assert
    assert.equal(offered, '86400')
    assert.match(summary, /keeps signing, beside the new one, for 1 day, until \d{4}-\d\d-\d\d \d\d:\d\d UTC/)
    assert.equal(afterCancel.previousSecretExpiresAt, null, 'cancelled, the endpoint kept its secret alone')
    assert.match(secret, /^whsec_/)
    assert.notEqual(secret, made.secret)
    assert.match(title, new RegExp(`endpoint ${made.id}\\b`))
    assert.ok(delivery !== undefined)
    assert.equal(verify(secret, delivery).type, 'webhook.test')
    assert.equal(verify(made.secret, delivery).type, 'webhook.test')
    const rolled = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    assert.ok(rolled.previousSecretExpiresAt !== null)
    assert.equal(await page.locator('[data-fact="previous secret signs until"]').innerText(), `${rolled.previousSecretExpiresAt.slice(0, 16).replace('T', ' ')} UTC`)
    assert.equal(await value.textContent(), '')
    assert.equal(await page.evaluate(`document.documentElement.outerHTML.includes(${JSON.stringify(secret)})`), false)
    await page.close()
  })

  it('When an endpoint\'s URL, events and description are changed on its page, then the admin API has them', async () => {
    // Arrange
    const to = await receiver()
    const made = await endpoint(to, { events: ['pet.created'], description: 'old note' })
    const { page } = await openWebhooks('change')
    await openEndpoint(page, made.id)

    // Act: every type, a new note, another path.
    await page.locator('#webhook-edit-url').fill(`${to.url}/v2`)
    await page.locator('#webhook-edit-events [data-all]').check()
    await page.locator('#webhook-edit-description').fill('new note')
    await page.locator('#webhook-edit button[type=submit]').click()
    await pollUntil(async () => (await page.locator('#webhook-edit-ok').innerText()).startsWith('Saved') ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the change saved' })

    // Assert
    const changed = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    assert.deepEqual([changed.url, changed.events, changed.description], [`${to.url}/v2`, null, 'new note'])
    assert.equal(await page.locator('#webhook-edit-ok').innerText(), 'Saved: url, description, events.')
    assert.equal(await page.locator('[data-fact="events"]').innerText(), 'all')
    assert.equal(await page.locator('[data-fact="url"]').innerText(), `${to.url}/v2`)
    await page.close()
  })

  it('When an endpoint is deleted, then cancelled it stays; confirmed, the admin API no longer has it and the list no longer shows it', async () => {
    // Arrange
    const made = await endpoint(await receiver(), { description: 'to go' })
    const { page } = await openWebhooks('delete')
    await openEndpoint(page, made.id)

    // Act: cancelled first, then confirmed.
    await page.locator('#webhook-delete').click()
    const summary = await page.locator('#webhook-delete-summary').innerText()
    await page.locator('#webhook-delete-cancel').click()
    await page.locator('#webhook-delete-dialog').waitFor({ state: 'hidden' })
    const kept = await adminApi<Webhook>('GET', `/webhooks/${made.id}`)
    await page.locator('#webhook-delete').click()
    await page.locator('#webhook-delete-confirm').click()
    await page.locator('#webhook-list-view').waitFor({ state: 'visible' })
    await page.locator('#webhooks tr').first().waitFor()

    // Assert
    assert.ok(summary.includes(made.url), summary)
    assert.equal(kept.id, made.id)
    const gone = await fetch(`${adminOrigin}/admin/v1/webhooks/${made.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    assert.equal(gone.status, 404)
    await gone.arrayBuffer()
    assert.equal(await page.locator(`#webhooks tr[data-webhook="${made.id}"]`).count(), 0)
    assert.match(await message(page, /deleted/), new RegExp(`^Endpoint ${made.id} .* deleted`))
    await page.close()
  })
})
