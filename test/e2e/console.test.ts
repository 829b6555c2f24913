// The operator console as an operator uses it: `petstore serve` with the
// admin listener on, the console opened in Chromium (the system's browser,
// driven by playwright-core), signed in with ADMIN_TOKEN, and each thing it
// does checked where it matters: on the public port. Usage is written every
// 100 ms here (USAGE_FLUSH_MS), so that the counts show at once. A
// screenshot of the page is saved under test-results/ for a person to look at.
import { after, afterEach, before, beforeEach, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import {
  CHANGE_TIMEOUT_MS, STEP_TIMEOUT_MS, adminCall, elsewhere as elsewhereOf, launchChromium, openTab, rendered, signIn as signInWith, startConsoleServer, startedLine, type Opened
} from '../support/console.js'
import { keyListFile, makeScanner, report } from '../support/scanner.js'
import {
  PROJECT_ROOT, createKey, makeTempDir, pollUntil, removeTempDir, sqliteUrl, type CreatedKey, type ServerProcess
} from '../support/process.js'

const SCREENSHOT = join(PROJECT_ROOT, 'test-results', 'console.png')
const ADMIN_TOKEN = 'console-5Wq8Zt1Rx6Kp9Lm2Vb3Hc7Nd0Fg4Js'
/** The admin token as the page keeps it (console/console.js), read in the page (the test is compiled without the browser's types). */
const STORED = 'sessionStorage.getItem(\'petstore-admin-token\')'
/** The chart's line colours (console/chart.js), as RGB. */
const ADMITTED_RGB = [64, 86, 161]
const REFUSED_RGB = [161, 47, 47]

describe('The operator console, in Chromium', { timeout: 300_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let browser: Browser | undefined
  let context: BrowserContext | undefined
  let env: Record<string, string> = {}
  /** http://127.0.0.1:ADMIN_PORT, as the started line reports it. */
  let adminOrigin = ''
  /** The pages the running test opened, by what each was opened for. */
  let pagesOfTest = new Map<string, Opened>()

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
    const opened = await openTab(context, adminOrigin)
    pagesOfTest.set(label, opened)
    return opened
  }

  /** What `requested` asked of anything but the admin listener. */
  const elsewhere = (requested: string[]): string[] => elsewhereOf(adminOrigin, requested)

  /** An admin API call with the admin token: its JSON body. */
  async function adminApi<T> (method: string, path: string, body?: unknown): Promise<T> {
    return await adminCall<T>(adminOrigin, ADMIN_TOKEN, method, path, body)
  }

  async function signIn (page: Page, token = ADMIN_TOKEN): Promise<void> {
    await signInWith(page, token)
  }

  /** Opens a key's page from the table (searching for it by id) and waits until its chart is drawn. */
  async function openKey (page: Page, id: number): Promise<void> {
    await page.locator('#search').fill(String(id))
    await page.locator('#filters button[type=submit]').click()
    await page.locator(`#keys tr[data-key="${id}"] a`).click()
    await keyDrawn(page, id)
  }

  async function keyDrawn (page: Page, id: number): Promise<void> {
    await page.locator(`#key[data-key="${id}"]`).waitFor()
    await page.locator('#key-totals[data-admitted]').waitFor()
    await page.locator('#key-chart canvas').waitFor()
  }

  /** Pixels of each line's colour on a chart's canvas. */
  async function linePixels (page: Page, selector: string): Promise<{ width: number, height: number, counts: number[] }> {
    return await page.locator(selector).evaluate((canvas, colours) => {
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
      const near = (i: number, rgb: number[]): boolean => rgb.every((value, c) => Math.abs((data[i + c] ?? 0) - value) < 24) && (data[i + 3] ?? 0) > 200
      const counts = colours.map((rgb) => {
        let count = 0
        for (let i = 0; i < data.length; i += 4) if (near(i, rgb)) count++
        return count
      })
      return { width: canvas.width, height: canvas.height, counts }
    }, [ADMITTED_RGB, REFUSED_RGB])
  }

  /** A chart's legend: each series' name and its swatch's colour. */
  async function legendOf (page: Page, selector: string): Promise<Array<{ name: string, colour: string }>> {
    // A string: the test is compiled without the browser's types, getComputedStyle among them.
    return await page.evaluate(`[...document.querySelectorAll(${JSON.stringify(`${selector} .legend li`)})]
      .map((item) => ({ name: item.textContent, colour: getComputedStyle(item.querySelector('.swatch')).backgroundColor }))`)
  }

  /** The keys the list shows, by id. */
  async function listed (page: Page): Promise<string[]> {
    return await page.locator('#keys tr[data-key]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-key') ?? ''))
  }

  /** The admin API requests a tab makes from opening the console to its first view drawn. */
  async function firstViewRequests (label: string): Promise<string[]> {
    const { page } = await openConsole(label)
    const calls: string[] = []
    page.on('request', (request) => { if (request.url().includes('/admin/v1/')) calls.push(request.url().replace(adminOrigin, '')) })
    await signIn(page)
    await page.close()
    return calls
  }

  const scanner = makeScanner()

  before(async () => {
    dir = makeTempDir()
    env = { DATABASE_URL: sqliteUrl(dir), ADMIN_PORT: '0', ADMIN_TOKEN, USAGE_FLUSH_MS: '100', SECRET_SCANNING_KEYS_URL: keyListFile(scanner) }
    const started = await startConsoleServer(env)
    server = started.server
    adminOrigin = started.adminOrigin
    const launched = await launchChromium()
    browser = launched.browser
    context = launched.context
  })

  beforeEach(() => { pagesOfTest = new Map() })
  // Every page any test opens is held to the same: no error or CSP violation, no failed load, nothing asked of another origin.
  // (A test that expects a refusal empties its page's problems once it has checked them.)
  afterEach(() => {
    const pages = [...pagesOfTest].map(([label, { problems, requested }]) => [label, { problems, elsewhere: elsewhere(requested) }] as const)
    assert.deepEqual(Object.fromEntries(pages.filter(([, page]) => page.problems.length > 0 || page.elsewhere.length > 0)), {})
  })

  after(async () => {
    await browser?.close().catch(() => undefined)
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When the service starts with the admin API on, then its started line names the console\'s URL beside the admin API\'s, and that URL serves the console', async () => {
    // Arrange: the service started in before().

    // Act
    const line = startedLine(running())

    // Assert
    assert.deepEqual({ adminApi: line.adminApi, console: line.console }, { adminApi: `${adminOrigin}/admin/v1`, console: `${adminOrigin}/admin/` })
    const response = await fetch(String(line.console))
    const page = await response.text()
    assert.equal(response.status, 200)
    assert.match(page, /<title>petstore: console<\/title>/)
  })

  it('When there are 300 keys rather than 3, then the first view makes the same admin API requests: two, whatever the number of keys', async () => {
    // Arrange: the first test, so that there are 3 keys, fewer than a page holds.
    for (let i = 0; i < 3; i++) await adminApi('POST', '/keys', { plan: 'free', name: `bulk ${i}` })
    const before = await firstViewRequests('first view, 3 keys')
    // Twenty at a time: the service commits them together, where one at a time each waits for its own.
    for (let i = 3; i < 300; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, 300 - i) }, async (_, j) => await adminApi('POST', '/keys', { plan: 'free', name: `bulk ${i + j}` })))
    }

    // Act
    const after = await firstViewRequests('first view, 300 keys')

    // Assert
    assert.deepEqual(after, before)
    assert.equal(before.length, 2, before.join('\n'))
  })

  it('When the operator signs in, then the overview shows every key\'s totals and chart, the busiest key today and the counts; the key\'s page shows its own', async () => {
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
    const { page, headers } = await openConsole('overview')
    await signIn(page)

    // Assert
    assert.match(headers['content-security-policy'] ?? '', /default-src 'none'/)
    assert.match(headers['content-security-policy'] ?? '', /script-src 'self'/)
    const totals = page.locator('#overview-totals')
    assert.equal(await totals.getAttribute('data-admitted'), String(admitted))
    assert.equal(await totals.getAttribute('data-refused'), String(refused))
    assert.equal(await totals.innerText(), `Last 30 days: ${admitted} admitted, ${refused} refused.`)
    const overviewPixels = await linePixels(page, '#overview-chart canvas')
    assert.ok(overviewPixels.counts.every((count) => count > 20), `pixels of each line's colour: ${JSON.stringify(overviewPixels)}`)
    assert.equal(await page.locator('#busiest tr').first().getAttribute('data-key'), String(key.id))
    const { keys } = await adminApi<{ keys: { byState: { active: number }, byPlan: { enterprise: number } } }>('GET', '/overview')
    assert.equal(await page.locator('[data-state-count="active"]').innerText(), String(keys.byState.active))
    assert.equal(await page.locator('[data-plan-count="enterprise"]').innerText(), String(keys.byPlan.enterprise))
    assert.equal(keys.byPlan.enterprise, 1)
    // A legend of the chart's own, in the lines' colours; uPlot's is off, so that nothing on the page reads `--`.
    const legend = [{ name: 'admitted', colour: `rgb(${ADMITTED_RGB.join(', ')})` }, { name: 'refused', colour: `rgb(${REFUSED_RGB.join(', ')})` }]
    assert.deepEqual(await legendOf(page, '#overview-chart'), legend)
    assert.equal(await page.locator('#overview-chart .legend').isVisible(), true)
    assert.ok(!(await page.locator('body').innerText()).includes('--'), 'the page shows --')
    // Plans come from the API: the create form offers exactly the plans the overview names.
    assert.deepEqual(await page.locator('#new-plan option').evaluateAll((options) => options.map((option) => option.textContent)), ['free', 'pro', 'business', 'enterprise'])

    await page.locator(`#busiest tr[data-key="${key.id}"] a`).click()
    await keyDrawn(page, key.id)
    assert.equal(await page.locator('#key-totals').getAttribute('data-admitted'), String(admitted))
    assert.equal(await page.locator('#key-totals').getAttribute('data-refused'), String(refused))
    assert.match(await page.locator('#key-title').innerText(), /mobile app/)
    assert.equal(await page.locator('#key-state').getAttribute('data-state'), 'active')
    const keyPixels = await linePixels(page, '#key-chart canvas')
    assert.ok(keyPixels.counts.every((count) => count > 20), `pixels of each line's colour: ${JSON.stringify(keyPixels)}`)
    assert.deepEqual(await legendOf(page, '#key-chart'), legend)
    assert.ok(!(await page.locator('body').innerText()).includes('--'), 'the key page shows --')
    // The token is in this tab's session storage, and nowhere that outlives it.
    assert.deepEqual(await page.evaluate(`({ session: ${STORED}, local: localStorage.length, cookie: document.cookie })`),
      { session: ADMIN_TOKEN, local: 0, cookie: '' })
    await page.close()
  })

  it('When a key is created in the form, then its page opens with the token shown once, which Copy puts on the clipboard and which works on the public port, and Done takes it off the page', async () => {
    // Arrange: the page may use the clipboard, as a browser lets a page on 127.0.0.1 once asked.
    assert.ok(context !== undefined, 'the browser was not started')
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: adminOrigin })
    const { page } = await openConsole('create')
    await signIn(page)

    // Act
    await page.locator('#create-panel summary').click()
    await page.locator('#new-name').fill('partner portal')
    await page.locator('#new-plan').selectOption('free')
    await page.locator('#new-concurrency').fill('3')
    await page.locator('#create button[type=submit]').click()
    const value = page.locator('#new-token-value')
    await value.waitFor({ state: 'visible' })
    const token = (await value.innerText()).trim()
    await page.locator('#new-token-copy').click()
    await page.locator('#new-token-copy[data-copied]').waitFor()
    const copied = { state: await page.locator('#new-token-copy').getAttribute('data-copied'), label: await page.locator('#new-token-copy').innerText() }
    const clipboard = await page.evaluate('navigator.clipboard.readText()')
    await context.clearPermissions()

    // Assert
    assert.match(token, /^pet_live_\S+$/)
    assert.deepEqual(copied, { state: 'clipboard', label: 'Copied' })
    assert.equal(clipboard, token)
    const id = Number(/key (\d+)/.exec(await page.locator('#new-token-title').innerText())?.[1])
    await keyDrawn(page, id)
    assert.match(await page.locator('#key-title').innerText(), /partner portal/)
    assert.equal(await page.locator('#key-state').getAttribute('data-state'), 'active')
    assert.ok((await page.locator('[data-fact="token"]').innerText()).endsWith(token.slice(-4)), 'the token hint ends as the token does')
    assert.equal(await page.locator('[data-fact="in flight"]').innerText(), '3 at once')
    await waitForStatus(token, 200, 'the new key')
    await page.locator('#new-token-done').click()
    await page.locator('#new-token').waitFor({ state: 'hidden' })
    assert.equal(await value.textContent(), '')
    await page.close()
  })

  it('When the list is searched, filtered and paged, then it shows the keys the admin API finds, a page at a time', async () => {
    // Arrange: 30 keys named alike, one of them revoked.
    const made: Array<{ id: number }> = []
    for (let i = 0; i < 30; i++) made.push(await adminApi('POST', '/keys', { plan: 'pro', name: `paged partner ${i}` }))
    const revoked = made[7]?.id ?? 0
    await adminApi('DELETE', `/keys/${revoked}`)
    const { page } = await openConsole('search')
    await signIn(page)
    const shown = async (): Promise<string[]> => await page.locator('#keys tr[data-key]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-key') ?? ''))

    // Act: search, then the next page, then back.
    await page.locator('#search').fill('PAGED PARTNER')
    await page.locator('#filters button[type=submit]').click()
    await pollUntil(async () => (await shown()).length === 25 && (await shown())[0] === String(made[0]?.id) ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the first page of the search' })
    const first = await shown()
    await page.locator('#next').click()
    await pollUntil(async () => (await shown()).length === 5 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the second page' })
    const second = await shown()
    await page.locator('#prev').click()
    await pollUntil(async () => (await shown())[0] === first[0] ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the first page again' })
    await page.locator('#filter-state').selectOption('revoked')
    await pollUntil(async () => (await shown()).length === 1 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the revoked keys' })
    const revokedShown = await shown()
    const revokedRow = await page.locator(`#keys tr[data-key="${revoked}"] td`).allTextContents()

    // Assert
    assert.deepEqual([...first, ...second], made.map((key) => String(key.id)))
    // Each row shows what an operator tells keys apart by: name, plan, cap in flight, scopes, token hint, state, created, expires, last use.
    assert.deepEqual(revokedRow.slice(1, 7), ['paged partner 7', 'pro', '25', 'pets:read pets:write', revokedRow[5], 'revoked'])
    assert.match(revokedRow[5] ?? '', /^pet_live_…[0-9A-Za-z]{4}$/)
    assert.match(revokedRow[7] ?? '', /^\d{4}-\d{2}-\d{2}$/)
    assert.deepEqual(revokedRow.slice(8), ['never', '—'])
    assert.equal(await page.locator('#next').isDisabled(), true)
    assert.deepEqual(revokedShown, [String(revoked)])
    await page.close()
  })

  it('When the list is searched, filtered and sorted, then the address holds it: a reload shows the same keys, and Back the search before', async () => {
    // Arrange: three keys named alike, one of them revoked.
    const made: Array<{ id: number }> = []
    for (let i = 0; i < 3; i++) made.push(await adminApi('POST', '/keys', { plan: 'business', name: `bookmarked ${i}` }))
    const revoked = String(made[1]?.id)
    await adminApi('DELETE', `/keys/${revoked}`)
    const { page } = await openConsole('search in the address')
    await signIn(page)
    const shows = async (ids: string[], what: string): Promise<void> => {
      await pollUntil(async () => JSON.stringify(await listed(page)) === JSON.stringify(ids) ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what })
    }
    const form = async (): Promise<string[]> => await Promise.all(['#search', '#filter-state', '#filter-plan', '#sort'].map(async (id) => await page.locator(id).inputValue()))

    // Act: a search, then the same search narrowed by state, plan and sort; reloaded; then Back.
    await page.locator('#search').fill('Bookmarked')
    await page.locator('#filters button[type=submit]').click()
    await shows(made.map((key) => String(key.id)), 'the search')
    await page.locator('#filter-state').selectOption('revoked')
    await shows([revoked], 'the revoked keys')
    // The reload waits for both lists to have come: a request it cut short would count as a failed load.
    const planned = page.waitForEvent('requestfinished', (request) => request.url().includes('plan=business') && !request.url().includes('sort='))
    await page.locator('#filter-plan').selectOption('business')
    await planned
    const sorted = page.waitForEvent('requestfinished', (request) => request.url().includes('sort=lastUsed'))
    await page.locator('#sort').selectOption('lastUsed')
    await sorted
    const address = page.url()
    await page.reload()
    await rendered(page)
    const reloaded = { address: page.url(), form: await form(), keys: await listed(page) }
    for (const undone of ['sort=', 'plan=', 'state=']) {
      const drawn = page.waitForEvent('requestfinished', (request) => request.url().includes('/admin/v1/keys?') && !request.url().includes(undone))
      await page.goBack()
      await drawn
    }
    await shows(made.map((key) => String(key.id)), 'the search before, after Back')

    // Assert
    assert.equal(new URL(address).hash, '#/?q=Bookmarked&state=revoked&plan=business&sort=lastUsed')
    assert.deepEqual(reloaded, { address, form: ['Bookmarked', 'revoked', 'business', 'lastUsed'], keys: [revoked] })
    assert.deepEqual(await form(), ['Bookmarked', '', '', 'id'])
    assert.equal(new URL(page.url()).hash, '#/?q=Bookmarked')
    await page.close()
  })

  it('When a key has been used, then the list shows when to the minute, in UTC as its heading says', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'free', '--name', 'used just now'])
    assert.equal(await publicStatus(key.token), 200)
    const { lastUsedAt } = await pollUntil(async () => {
      const shown = await adminApi<{ lastUsedAt: string | null }>('GET', `/keys/${key.id}`)
      return shown.lastUsedAt === null ? undefined : { lastUsedAt: shown.lastUsedAt }
    }, { ms: CHANGE_TIMEOUT_MS, every: 100, what: 'the key\'s last use to be written' })
    const { page } = await openConsole('last used')
    await signIn(page)

    // Act
    await page.locator('#search').fill(String(key.id))
    await page.locator('#filters button[type=submit]').click()
    const cell = page.locator(`#keys tr[data-key="${key.id}"] td`).last()
    await cell.waitFor()

    // Assert
    assert.equal(await cell.innerText(), lastUsedAt.slice(0, 16).replace('T', ' '))
    assert.match(await cell.innerText(), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/)
    assert.equal(await page.locator('#keys-title ~ table th').last().innerText(), 'Last used (UTC)')
    await page.close()
  })

  it('When a key is changed on its page, then the admin API has the new name, plan, limits, scopes and expiry', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'free', '--name', 'intern tool'])
    const { page } = await openConsole('edit')
    await signIn(page)
    await openKey(page, key.id)
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 16)

    // Act
    await page.locator('#edit-name').fill('reporting tool')
    await page.locator('#edit-plan').selectOption('business')
    await page.locator('#edit-per-minute').fill('77')
    await page.locator('#edit-scopes [data-scope="pets:write"]').uncheck()
    await page.locator('#edit-expires').fill(expires)
    await page.locator('#edit button[type=submit]').click()
    await pollUntil(async () => (await page.locator('#edit-ok').innerText()).startsWith('Saved') ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the change saved' })

    // Assert
    const changed = await adminApi<{ name: string, plan: string, perMinute: number, perDay: number, concurrency: number, scopes: string[], expiresAt: string | null }>('GET', `/keys/${key.id}`)
    // The cap was left as shown: the key has none of its own, so it takes the new plan's.
    assert.deepEqual({ ...changed, expiresAt: changed.expiresAt?.slice(0, 16) }, {
      ...changed, name: 'reporting tool', plan: 'business', perMinute: 77, perDay: 100_000, concurrency: 100, scopes: ['pets:read'], expiresAt: expires
    })
    assert.match(await page.locator('#key-title').innerText(), /reporting tool/)
    await page.close()
  })

  it('When a key\'s cap of requests in flight is set on its page, then the admin API and the page have it; emptied, it is the plan\'s again, and follows the plan', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'free', '--name', 'batch importer'])
    const { page } = await openConsole('concurrency')
    await signIn(page)
    await openKey(page, key.id)
    const shownBefore = [await page.locator('[data-fact="in flight"]').innerText(), await page.locator('#edit-concurrency').inputValue()]
    const save = async (what: string): Promise<void> => {
      await page.locator('#edit button[type=submit]').click()
      await pollUntil(async () => (await page.locator('#edit-ok').innerText()).startsWith('Saved') ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what })
      await page.locator('#edit-ok').evaluate((node) => { node.textContent = '' })
    }

    // Act
    await page.locator('#edit-concurrency').fill('2')
    await save('the cap saved')
    const set = await adminApi<{ concurrency: number }>('GET', `/keys/${key.id}`)
    const shownSet = await page.locator('[data-fact="in flight"]').innerText()
    await page.locator('#edit-concurrency').fill('')
    await page.locator('#edit-plan').selectOption('pro')
    await save('the plan\'s cap saved')
    const back = await adminApi<{ plan: string, concurrency: number }>('GET', `/keys/${key.id}`)

    // Assert
    assert.deepEqual(shownBefore, ['5 at once', '5'])
    assert.equal(set.concurrency, 2)
    assert.equal(shownSet, '2 at once')
    assert.deepEqual([back.plan, back.concurrency], ['pro', 25])
    assert.equal(await page.locator('[data-fact="in flight"]').innerText(), '25 at once')
    assert.equal(await page.locator('#edit-concurrency').inputValue(), '25')
    await page.close()
  })

  it('When a key is rolled, then the dialog names the overlap, a day unless changed; confirmed, the new token is shown once and both tokens work', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'pro', '--name', 'nightly sync'])
    await waitForStatus(key.token, 200, 'the key before the roll')
    const { page } = await openConsole('roll')
    await signIn(page)
    await openKey(page, key.id)

    // Act: opened and cancelled, then opened and confirmed with the overlap offered.
    await page.locator('#roll').click()
    await page.locator('#roll-dialog').waitFor({ state: 'visible' })
    const offered = await page.locator('#roll-overlap').inputValue()
    const summary = await page.locator('#roll-summary').innerText()
    await page.locator('#roll-cancel').click()
    await page.locator('#roll-dialog').waitFor({ state: 'hidden' })
    const afterCancel = await adminApi<{ tokenHint: string }>('GET', `/keys/${key.id}`)
    await page.locator('#roll').click()
    await page.locator('#roll-confirm').click()
    const value = page.locator('#new-token-value')
    await value.waitFor({ state: 'visible' })
    const token = (await value.innerText()).trim()

    // Assert
    assert.equal(offered, '86400')
    assert.match(summary, /keeps working for 1 day, until \d{4}-\d\d-\d\d \d\d:\d\d UTC/)
    assert.ok(summary.includes(afterCancel.tokenHint), summary)
    assert.ok(key.token.endsWith(afterCancel.tokenHint.slice(-4)), 'cancelled, the key kept its token')
    assert.match(token, /^pet_live_\S+$/)
    assert.match(await page.locator('#new-token-title').innerText(), new RegExp(`key ${key.id}\\b`))
    await pollUntil(async () => (await page.locator('[data-fact="token"]').innerText()).endsWith(token.slice(-4)) ? true : undefined,
      { ms: STEP_TIMEOUT_MS, every: 50, what: 'the new token hint' })
    assert.match(await page.locator('[data-fact="previous token until"]').innerText(), /UTC$/)
    await waitForStatus(token, 200, 'the new token')
    assert.equal(await publicStatus(key.token), 200, 'the old token works during the overlap')
    await page.close()
  })

  it('When a key has expired, then its page offers no roll', async () => {
    // Arrange
    const key = await adminApi<{ id: number }>('POST', '/keys', { plan: 'free', name: 'short lived', expiresAt: new Date(Date.now() + 1_500).toISOString() })
    await pollUntil(async () => Date.now() > Date.parse((await adminApi<{ expiresAt: string }>('GET', `/keys/${key.id}`)).expiresAt) ? true : undefined,
      { ms: CHANGE_TIMEOUT_MS, every: 100, what: 'the key to expire' })
    const { page } = await openConsole('expired')
    await signIn(page)

    // Act
    await openKey(page, key.id)

    // Assert
    assert.equal(await page.locator('#key-state').getAttribute('data-state'), 'expired')
    assert.equal(await page.locator('#roll').isHidden(), true)
    assert.equal(await page.locator('#revoke').isHidden(), false)
    await page.close()
  })

  it('When a key is revoked and the dialog is confirmed, then its token gets 401 and the page shows it revoked; cancelled, nothing changes', async (t: TestContext) => {
    // Arrange
    const key: CreatedKey = await createKey(env, ['--plan', 'free', '--name', 'old web shop'])
    await waitForStatus(key.token, 200, 'the key before the revoke')
    const { page } = await openConsole('revoke')
    await signIn(page)
    await openKey(page, key.id)
    try {
      // Act: cancelled first, then confirmed.
      await page.locator('#revoke').click()
      const title = await page.locator('#revoke-title').innerText()
      await page.locator('#revoke-cancel').click()
      await page.locator('#revoke-dialog').waitFor({ state: 'hidden' })
      assert.equal(await publicStatus(key.token), 200)
      assert.equal(await page.locator('#key-state').getAttribute('data-state'), 'active')

      await page.locator('#revoke').click()
      await page.locator('#revoke-confirm').click()
      await page.locator('#key-state[data-state="revoked"]').waitFor()

      // Assert
      assert.match(title, new RegExp(`Revoke key ${key.id} \\(old web shop\\)`))
      assert.equal(await page.locator('#roll').isHidden(), true, 'a revoked key offers no roll')
      assert.equal(await page.locator('#revoke').isHidden(), true, 'a revoked key offers no revoke')
      assert.equal(await page.locator('#edit button[type=submit]').isDisabled(), true, 'a revoked key cannot be changed')
      await waitForStatus(key.token, 401, 'the revoked key')
    } finally {
      // Saved on a failure too: the page as it stood is the first thing to look at.
      mkdirSync(join(PROJECT_ROOT, 'test-results'), { recursive: true })
      await page.goto(`${adminOrigin}/admin/#/`)
      await rendered(page)
      await page.screenshot({ path: SCREENSHOT, fullPage: true })
      t.diagnostic(`screenshot: ${SCREENSHOT}`)
      await page.close()
    }
  })

  it('When a secret scanner reports a key\'s token, then the list marks the key leaked, its page says where, when and by which report, and the overview counts it', async () => {
    // Arrange
    const key: CreatedKey = await createKey(env, ['--plan', 'free', '--name', 'pushed to github'])
    const where = 'https://github.com/octocat/Hello-World/blob/0123456789abcdef0123456789abcdef01234567/.env'
    const body = report([key.token], where)
    const answer = await fetch(`${running().origin}/v1/secret-scanning`, { method: 'POST', headers: { 'content-type': 'application/json', ...scanner.sign(body) }, body })
    assert.equal(answer.status, 200, await answer.text())
    await waitForStatus(key.token, 401, 'the leaked key')
    const { leak } = await adminApi<{ leak: { reportedAt: string, report: string } }>('GET', `/keys/${key.id}`)
    const { keys } = await adminApi<{ keys: { leaked: number } }>('GET', '/overview')

    // Act
    const { page } = await openConsole('leaked')
    await signIn(page)
    await page.locator('#search').fill(String(key.id))
    await page.locator('#filters button[type=submit]').click()
    const mark = page.locator(`#keys tr[data-key="${key.id}"] .leaked`)
    await mark.waitFor()
    const counted = await page.locator('[data-leak-count]').innerText()
    await page.locator(`#keys tr[data-key="${key.id}"] a`).click()
    await keyDrawn(page, key.id)

    // Assert
    assert.equal(await mark.getAttribute('data-leaked'), leak.reportedAt)
    assert.equal(counted, String(keys.leaked))
    assert.ok(keys.leaked >= 1)
    assert.equal(await page.locator('#key-state').getAttribute('data-state'), 'revoked')
    assert.equal(await page.locator('#key-state .leaked').innerText(), 'leaked')
    const fact = async (name: string): Promise<string> => await page.locator(`[data-fact="${name}"]`).innerText()
    assert.equal(await fact('found at'), where)
    assert.equal(await fact('found in'), 'content')
    assert.match(await fact('leaked'), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/)
    assert.equal(await fact('reported by'), `secret scanner, report ${leak.report.slice(7, 19)}`)
    await page.close()
  })

  it('When the page is reloaded on a key\'s page with the token in the tab, then that key\'s page is drawn again, its form showing the key as it is, asking the overview and the key together', async () => {
    // Arrange
    const key = await createKey(env, ['--plan', 'pro', '--name', 'reloaded', '--scopes', 'pets:read'])
    const { page } = await openConsole('reload')
    await signIn(page)
    await openKey(page, key.id)
    const calls: string[] = []
    page.on('request', (request) => { if (request.url().includes('/admin/v1/')) calls.push(request.url().replace(adminOrigin, '')) })

    // Act
    await page.reload()
    await keyDrawn(page, key.id)

    // Assert
    assert.deepEqual([...calls].sort(), ['/admin/v1/keys/' + key.id, `/admin/v1/keys/${key.id}/usage`, '/admin/v1/overview'].sort())
    assert.equal(await page.locator('#list-view').isHidden(), true)
    assert.match(await page.locator('#key-title').innerText(), /reloaded/)
    // The form shows the key as it is, though the plans and scopes it offers came after the key.
    await pollUntil(async () => await page.locator('#edit-scopes [data-scope]').count() === 2 ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the scopes offered' })
    assert.equal(await page.locator('#edit-plan').inputValue(), 'pro')
    assert.deepEqual(await page.locator('#edit-scopes [data-scope]').evaluateAll((boxes) => boxes.map((box) => [box.getAttribute('value'), (box as unknown as { checked: boolean }).checked])),
      [['pets:read', true], ['pets:write', false]])
    await page.close()
  })

  it('When the list is searched while the first page is still on its way, then the search\'s keys stay listed once the first page arrives (regression: a drawing since replaced overwrote the newer one)', async () => {
    // Arrange: two keys, only one of them found by the search; the first page's answer is held until the search is drawn.
    const loser = await adminApi<{ id: number }>('POST', '/keys', { plan: 'free', name: 'race loser' })
    const winner = await adminApi<{ id: number }>('POST', '/keys', { plan: 'free', name: 'race winner' })
    const { page } = await openConsole('search while drawing')
    let held: Request | undefined
    let arrived!: () => void
    const firstPageAsked = new Promise<void>((resolve) => { arrived = resolve })
    let release!: () => void
    const released = new Promise<void>((resolve) => { release = resolve })
    await page.route((url) => url.pathname === '/admin/v1/keys' && !url.searchParams.has('q'), async (route) => {
      if (held !== undefined) { await route.continue(); return }
      held = route.request()
      arrived()
      await released
      await route.continue()
    })
    await page.locator('#admin-token').fill(ADMIN_TOKEN)
    await page.locator('#sign-in button[type=submit]').click()
    await firstPageAsked
    const shown = async (): Promise<string[]> => await page.locator('#keys tr[data-key]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-key') ?? ''))

    // Act: the search is drawn, then the first page's answer arrives.
    await page.locator('#search').fill('race winner')
    await page.locator('#filters button[type=submit]').click()
    await pollUntil(async () => (await shown()).includes(String(winner.id)) ? true : undefined, { ms: STEP_TIMEOUT_MS, every: 50, what: 'the search drawn' })
    const finished = page.waitForEvent('requestfinished', (request) => request === held)
    release()
    await finished
    // The key's page is asked only once the first page's answer is in: its drawing comes after that answer was read.
    await page.locator(`#keys tr[data-key="${winner.id}"] a`).click()
    await keyDrawn(page, winner.id)

    // Assert
    assert.deepEqual(await shown(), [String(winner.id)], `the key ${loser.id} was listed too`)
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
    assert.equal(await page.locator('#keys tr[data-key]').count(), 0)
    assert.equal(await page.evaluate('sessionStorage.length'), 0)
    // The refusal itself, and Chromium's line about it, are the only problems this page had.
    assert.deepEqual([...problems].sort(), [
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
      `HTTP 401: ${adminOrigin}/admin/v1/overview`
    ].sort())
    problems.length = 0
    await page.close()
  })

  it('When the operator signs in and opens a key\'s page, then the page takes uPlot from the admin listener, logs no error or CSP violation, fails no load and asks nothing of another origin', async () => {
    // Arrange
    const key = await adminApi<{ id: number }>('POST', '/keys', { plan: 'free', name: 'clean page' })
    const { page, problems, requested } = await openConsole('clean page')

    // Act
    await signIn(page)
    await openKey(page, key.id)
    await page.close()

    // Assert
    assert.ok(requested.includes(`${adminOrigin}/admin/console/uPlot.esm.js`), requested.join('\n'))
    assert.deepEqual(problems, [])
    assert.deepEqual(elsewhere(requested), [])
  })

  it('When the operator opens the deprecated operations panel, then it lists the keys that called getPet with their calls, and no other key', async () => {
    // Arrange: one key calls getPet twice (404s count: the caller still calls it), another only lists.
    const caller = await createKey(env, ['--plan', 'pro', '--name', 'old client'])
    const lister = await createKey(env, ['--plan', 'pro', '--name', 'new client'])
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${running().origin}/v1/pets/999999`, { headers: { authorization: `Bearer ${caller.token}` } })
      await response.arrayBuffer()
      assert.equal(response.status, 404)
    }
    assert.equal(await publicStatus(lister.token), 200)
    await pollUntil(async () => {
      const operations = await adminApi<Array<{ callers: Array<{ key: { id: number }, calls: number }> }>>('GET', '/deprecations')
      return operations[0]?.callers.some((c) => c.key.id === caller.id && c.calls === 2) === true ? true : undefined
    }, { ms: CHANGE_TIMEOUT_MS, every: 100, what: 'the calls to be written' })
    const { page, problems } = await openConsole('deprecations')
    await signIn(page)

    // Act
    await page.locator('#deprecations-panel summary').click()
    const row = page.locator(`#deprecations tr[data-caller="${caller.id}"]`)
    await row.waitFor()

    // Assert
    const cells = await row.locator('td').allInnerTexts()
    assert.equal(cells[0], `${caller.id} · old client`)
    assert.equal(cells[1], 'pro')
    assert.equal(cells[4], '2')
    assert.match(cells[5] ?? '', /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/)
    assert.match(await page.locator('#deprecations tr[data-operation="getPet"]').innerText(), /getPet\s+sunset 2030-12-05; 1 key in the last 30 days/)
    assert.equal(await page.locator(`#deprecations tr[data-caller="${lister.id}"]`).count(), 0)
    assert.deepEqual(problems, [])
    await page.close()
  })
})
