// The operator console as an operator uses it: `petstore serve` with the
// admin listener on, the console opened in Chromium (the system's browser,
// driven by playwright-core), signed in with ADMIN_TOKEN, and each thing it
// does checked where it matters: on the public port. Usage is written every
// 100 ms here (USAGE_FLUSH_MS), so that the counts show at once. A
// screenshot of the page is saved under test-results/ for a person to look at.
import { after, before, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import {
  PROJECT_ROOT, createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl, startServer, type CreatedKey, type ServerProcess
} from '../support/process.js'

/** Every Playwright wait (a click, a selector, a navigation) fails after this instead of hanging. */
const STEP_TIMEOUT_MS = 15_000
/** Starting Chromium takes about a second; a loaded machine may need far longer. */
const LAUNCH_TIMEOUT_MS = 60_000
/** Every change holds within a second (README: Managing keys); a loaded machine gets more. */
const CHANGE_TIMEOUT_MS = 10_000
const SCREENSHOT = join(PROJECT_ROOT, 'test-results', 'console.png')
const ADMIN_TOKEN = 'console-test-admin-token-0123456789abcdef'
/** The admin token as the page keeps it (console/console.js), read in the page (the test is compiled without the browser's types). */
const STORED = 'sessionStorage.getItem(\'petstore-admin-token\')'
/** The chart's line colours (console/console.js), as RGB. */
const ADMITTED_RGB = [64, 86, 161]
const REFUSED_RGB = [161, 47, 47]

/** The browser found or installed by `npm test` (scripts/services/chromium.js); fails, never skips, without it. */
function chromiumExecutable (): string {
  const path = process.env.PETSTORE_TEST_CHROMIUM
  if (path === undefined || path === '') {
    throw new Error('PETSTORE_TEST_CHROMIUM is not set: run the tests with npm test, which finds or installs Chromium')
  }
  return path
}

interface Opened {
  page: Page
  /** What went wrong on this page: console errors (CSP violations among them), uncaught exceptions, failed loads, HTTP errors. */
  problems: string[]
  /** The answer to GET /admin/. */
  headers: Record<string, string>
}

describe('The operator console, in Chromium', { timeout: 300_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let browser: Browser | undefined
  let context: BrowserContext | undefined
  let env: Record<string, string> = {}
  /** http://127.0.0.1:ADMIN_PORT, as the started line reports it. */
  let adminOrigin = ''
  /** Every page's problems, by what the page was opened for. */
  const problemsByPage = new Map<string, string[]>()
  /** Every URL any page requested. */
  const requested: string[] = []

  const running = (): ServerProcess => {
    assert.ok(server !== undefined, 'the server was not started')
    return server
  }

  /** GET /v1/pets on the public port with `token`: its status. */
  async function publicStatus (token: string): Promise<number> {
    const response = await fetch(`${running().origin}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${token}` } })
    await response.arrayBuffer()
    return response.status
  }

  /** Waits until `token` gets `status` on the public port: every change holds within a second, not at once. */
  async function waitForStatus (token: string, status: number, what: string): Promise<void> {
    await pollUntil(async () => (await publicStatus(token)) === status ? true : undefined,
      { ms: CHANGE_TIMEOUT_MS, every: 100, what: `${what}: ${status} on the public port` })
  }

  /** The key's usage over the last 30 days, from the admin API. */
  async function usageTotals (id: number): Promise<{ admitted: number, refused: number }> {
    const response = await fetch(`${adminOrigin}/admin/v1/keys/${id}/usage`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    assert.equal(response.status, 200)
    const rows = await response.json() as Array<{ admitted: number, refused: number }>
    return rows.reduce((sum, row) => ({ admitted: sum.admitted + row.admitted, refused: sum.refused + row.refused }), { admitted: 0, refused: 0 })
  }

  /** A fresh tab (so a fresh session storage) on /admin/, its problems recorded under `label`. */
  async function openConsole (label: string): Promise<Opened> {
    assert.ok(context !== undefined, 'the browser was not started')
    const page = await context.newPage()
    const problems: string[] = []
    problemsByPage.set(label, problems)
    page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
    page.on('pageerror', (error) => { problems.push(`uncaught: ${error.message}`) })
    page.on('request', (request) => { requested.push(request.url()) })
    page.on('requestfailed', (request) => { problems.push(`failed: ${request.url()} (${request.failure()?.errorText ?? 'unknown'})`) })
    page.on('response', (response) => { if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`) })
    const response = await page.goto(`${adminOrigin}/admin/`)
    assert.ok(response !== null)
    assert.equal(response.status(), 200)
    return { page, problems, headers: response.headers() }
  }

  /** Signs in with `token` and waits until every listed key has its totals and its chart. */
  async function signIn (page: Page, token = ADMIN_TOKEN): Promise<void> {
    await page.locator('#admin-token').fill(token)
    await page.locator('#sign-in button[type=submit]').click()
    await page.locator('#keys-view').waitFor({ state: 'visible' })
    await rendered(page)
  }

  /** Waits until the page has drawn its keys: each one's totals and chart. */
  async function rendered (page: Page): Promise<void> {
    await page.locator('#keys article').first().waitFor()
    await pollUntil(async () => await page.locator('#keys article').evaluateAll((cards) =>
      cards.every((card) => card.querySelector('.totals[data-admitted]') !== null && card.querySelector('[data-usage] canvas') !== null))
      ? true
      : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'every key drawn' })
    const ids = await page.locator('#keys article').evaluateAll((cards) => cards.map((card) => card.getAttribute('data-key')))
    assert.deepEqual(ids, [...new Set(ids)], 'a key listed twice')
  }

  const card = (page: Page, id: number): ReturnType<Page['locator']> => page.locator(`#keys article[data-key="${id}"]`)

  before(async () => {
    dir = makeTempDir()
    env = { DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: '100' }
    server = await startServer(env)
    await server.waitForStdout((out) => out.includes('petstore started'), 5_000, 'the started line')
    const adminApi = /"adminApi":"(http:\/\/127\.0\.0\.1:\d+)\/admin\/v1"/.exec(server.stdout)?.[1]
    assert.ok(adminApi !== undefined, `no admin API address in:\n${server.stdout}`)
    adminOrigin = adminApi
    browser = await chromium.launch({
      executablePath: chromiumExecutable(),
      headless: true,
      // Chromium refuses its sandbox to root (as npm test runs on a fresh
      // machine), and the only pages it opens are the service's own.
      args: ['--no-sandbox'],
      timeout: LAUNCH_TIMEOUT_MS
    })
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    context.setDefaultTimeout(STEP_TIMEOUT_MS)
    context.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)
    // Chromium logs a CSP violation as a console error; the event says it in the page's own words too.
    // (A string: the test is compiled without the browser's types.)
    await context.addInitScript({
      content: `document.addEventListener('securitypolicyviolation', (event) => {
        console.error('CSP violation: ' + event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline'))
      })`
    })
  })

  after(async () => {
    await browser?.close().catch(() => undefined)
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When the operator signs in, then a key that made requests shows its admitted and refused totals and a drawn chart', async () => {
    // Arrange: a key with 3 requests a minute, sent 8 requests; what the service answered is what must show.
    const key = await createKey(env, ['--plan', 'enterprise', '--name', 'mobile app', '--per-minute', '3', '--per-day', '1000'])
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push(await publicStatus(key.token))
    const admitted = statuses.filter((status) => status === 200).length
    const refused = statuses.filter((status) => status === 429).length
    assert.equal(admitted + refused, statuses.length, `statuses: ${statuses.join(' ')}`)
    assert.ok(refused > 0, `statuses: ${statuses.join(' ')}`)
    await pollUntil(async () => {
      const totals = await usageTotals(key.id)
      return totals.admitted === admitted && totals.refused === refused ? true : undefined
    }, { ms: CHANGE_TIMEOUT_MS, every: 100, what: 'the usage to be written' })

    // Act
    const { page, headers } = await openConsole('chart')
    await signIn(page)

    // Assert
    assert.match(headers['content-security-policy'] ?? '', /default-src 'none'/)
    assert.match(headers['content-security-policy'] ?? '', /script-src 'self'/)
    const shown = card(page, key.id)
    assert.equal(await shown.locator('[data-state]').getAttribute('data-state'), 'active')
    assert.match(await shown.locator('h3').innerText(), /mobile app/)
    const totals = shown.locator('.totals')
    assert.equal(await totals.getAttribute('data-admitted'), String(admitted))
    assert.equal(await totals.getAttribute('data-refused'), String(refused))
    assert.equal(await totals.innerText(), `Last 30 days: ${admitted} admitted, ${refused} refused.`)
    // Drawn: both series' lines have pixels of their own colour on the canvas.
    const pixels = await shown.locator('[data-usage] canvas').evaluate((canvas, colours) => {
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
      const near = (i: number, rgb: number[]): boolean => rgb.every((value, c) => Math.abs((data[i + c] ?? 0) - value) < 24) && (data[i + 3] ?? 0) > 200
      const counts = colours.map((rgb) => {
        let count = 0
        for (let i = 0; i < data.length; i += 4) if (near(i, rgb)) count++
        return count
      })
      return { width: canvas.width, height: canvas.height, counts }
    }, [ADMITTED_RGB, REFUSED_RGB])
    assert.ok(pixels.width > 0 && pixels.height > 0, JSON.stringify(pixels))
    assert.ok(pixels.counts.every((count: number) => count > 20), `pixels of each line's colour: ${JSON.stringify(pixels)}`)
    // The token is in this tab's session storage, and nowhere that outlives it.
    assert.deepEqual(await page.evaluate(`({ session: ${STORED}, local: localStorage.length, cookie: document.cookie })`),
      { session: ADMIN_TOKEN, local: 0, cookie: '' })
    await page.close()
  })

  it('When a key is created in the form, then the token shown once works on the public port, and Done takes it off the page', async () => {
    // Arrange
    const { page } = await openConsole('create')
    await signIn(page)

    // Act
    await page.locator('#new-name').fill('partner portal')
    await page.locator('#new-plan').selectOption('free')
    await page.locator('#create button[type=submit]').click()
    const value = page.locator('#new-token-value')
    await value.waitFor({ state: 'visible' })
    const token = (await value.innerText()).trim()
    await rendered(page)

    // Assert
    assert.match(token, /^pet_live_\S+$/)
    const id = Number(/key (\d+)/.exec(await page.locator('#new-token-title').innerText())?.[1])
    const shown = card(page, id)
    assert.match(await shown.locator('h3').innerText(), /partner portal/)
    assert.equal(await shown.locator('[data-state]').getAttribute('data-state'), 'active')
    assert.ok((await shown.innerText()).includes(token.slice(-4)), 'the token hint ends as the token does')
    await waitForStatus(token, 200, 'the new key')
    await page.locator('#new-token-done').click()
    await page.locator('#new-token').waitFor({ state: 'hidden' })
    assert.equal(await value.textContent(), '')
    await page.close()
  })

  it('When a key is rolled with no overlap, then the new token shown works and the old one gets 401', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'pro', '--name', 'nightly sync'])
    await waitForStatus(key.token, 200, 'the key before the roll')
    const { page } = await openConsole('roll')
    await signIn(page)

    // Act
    await card(page, key.id).locator('.actions select').selectOption('0')
    await page.locator(`[data-roll="${key.id}"]`).click()
    const value = page.locator('#new-token-value')
    await value.waitFor({ state: 'visible' })
    const token = (await value.innerText()).trim()
    await rendered(page)

    // Assert
    assert.match(token, /^pet_live_\S+$/)
    assert.notEqual(token, key.token)
    assert.match(await page.locator('#new-token-title').innerText(), new RegExp(`key ${key.id}\\b`))
    assert.ok((await card(page, key.id).innerText()).includes(token.slice(-4)), 'the token hint is the new token\'s')
    await waitForStatus(token, 200, 'the new token')
    await waitForStatus(key.token, 401, 'the old token')
    await page.close()
  })

  it('When a key is revoked and the dialog is accepted, then its token gets 401 and the page shows it revoked; dismissed, nothing changes', async (t: TestContext) => {
    // Arrange
    const key: CreatedKey = await createKey(env, ['--plan', 'free', '--name', 'old web shop'])
    await waitForStatus(key.token, 200, 'the key before the revoke')
    const { page } = await openConsole('revoke')
    await signIn(page)
    const dialogs: string[] = []
    try {
      // Act: dismissed first, then accepted.
      page.once('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss() })
      await page.locator(`[data-revoke="${key.id}"]`).click()
      await pollUntil(async () => dialogs.length === 1 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the first dialog' })
      await rendered(page)
      assert.equal(await card(page, key.id).locator('[data-state]').getAttribute('data-state'), 'active')
      assert.equal(await publicStatus(key.token), 200)

      page.once('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.accept() })
      await page.locator(`[data-revoke="${key.id}"]`).click()
      await card(page, key.id).locator('[data-state="revoked"]').waitFor()
      await rendered(page)

      // Assert
      assert.equal(dialogs.length, 2)
      assert.match(dialogs[1] ?? '', new RegExp(`Revoke key ${key.id} \\(old web shop\\)`))
      const shown = card(page, key.id)
      assert.equal(await shown.locator('[data-state]').innerText(), 'revoked')
      assert.equal(await shown.locator('[data-revoke], [data-roll]').count(), 0, 'a revoked key offers no roll or revoke')
      await waitForStatus(key.token, 401, 'the revoked key')
    } finally {
      // Saved on a failure too: the page as it stood is the first thing to look at.
      mkdirSync(join(PROJECT_ROOT, 'test-results'), { recursive: true })
      await page.screenshot({ path: SCREENSHOT, fullPage: true })
      t.diagnostic(`screenshot: ${SCREENSHOT}`)
      await page.close()
    }
  })

  it('When a key is created while the list is still being drawn, then every key is listed once (regression: an action during a drawing listed keys twice)', async () => {
    // Arrange: each key's usage answers late, so that drawing the list takes a while.
    const { page } = await openConsole('create while drawing')
    await page.route('**/admin/v1/keys/*/usage?*', async (route) => {
      await delay(300)
      await route.continue()
    })
    await page.locator('#admin-token').fill(ADMIN_TOKEN)
    await page.locator('#sign-in button[type=submit]').click()
    await page.locator('#keys article').first().waitFor()
    const before = await page.locator('#keys article').count()

    // Act: while the first drawing is under way.
    await page.locator('#new-name').fill('impatient')
    await page.locator('#create button[type=submit]').click()
    await page.locator('#new-token-value').waitFor({ state: 'visible' })
    const id = Number(/key (\d+)/.exec(await page.locator('#new-token-title').innerText())?.[1])
    await card(page, id).locator('.totals[data-admitted]').waitFor()
    await rendered(page)
    // Long enough for the first drawing, had it gone on, to have added its cards.
    await delay(1_000)

    // Assert
    assert.ok(before < 4, `the first drawing had already listed ${before} keys: the race was not set up`)
    const ids = await page.locator('#keys article').evaluateAll((cards) => cards.map((card) => card.getAttribute('data-key')))
    assert.deepEqual(ids, [...new Set(ids)], `a key listed twice: ${ids.join(' ')}`)
    assert.equal(ids[0], String(id))
    await page.unrouteAll({ behavior: 'ignoreErrors' })
    await page.close()
  })

  it('When the operator signs out, then the token leaves session storage, and a reload asks for it again', async () => {
    // Arrange
    const { page } = await openConsole('sign out')
    await signIn(page)
    assert.equal(await page.evaluate(STORED), ADMIN_TOKEN)

    // Act
    await page.locator('#sign-out').click()

    // Assert
    await page.locator('#sign-in').waitFor({ state: 'visible' })
    assert.equal(await page.locator('#keys-view').isHidden(), true)
    assert.equal(await page.evaluate('sessionStorage.length'), 0)
    await page.reload()
    await page.locator('#sign-in').waitFor({ state: 'visible' })
    assert.equal(await page.locator('#keys-view').isHidden(), true)
    await page.close()
  })

  it('When a wrong admin token is entered, then the page says so, shows no key and keeps no token', async () => {
    // Arrange
    const { page, problems } = await openConsole('wrong token')

    // Act
    await page.locator('#admin-token').fill('not-the-admin-token-0123456789abcdef')
    await page.locator('#sign-in button[type=submit]').click()

    // Assert
    const error = page.locator('#sign-in-error')
    await pollUntil(async () => (await error.innerText()) !== '' ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the sign-in error' })
    assert.equal(await error.innerText(), 'That is not the admin token.')
    assert.equal(await page.locator('#keys-view').isHidden(), true)
    assert.equal(await page.locator('#keys article').count(), 0)
    assert.equal(await page.evaluate('sessionStorage.length'), 0)
    // The refusal itself, and Chromium's line about it, are the only problems this page had.
    assert.deepEqual([...problems].sort(), [
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
      `HTTP 401: ${adminOrigin}/admin/v1/keys?limit=1`
    ].sort())
    problems.length = 0
    await page.close()
  })

  it('When the console has been used, then it logged no error or CSP violation, failed no load, and requested nothing but the admin listener', () => {
    // Assert
    assert.ok(requested.some((url) => url === `${adminOrigin}/admin/console/uPlot.iife.min.js`), requested.join('\n'))
    assert.deepEqual(Object.fromEntries([...problemsByPage].filter(([, problems]) => problems.length > 0)), {})
    assert.deepEqual(requested.filter((url) => !url.startsWith(`${adminOrigin}/`) && !url.startsWith('data:')), [])
  })
})
