// The docs page as a person uses it: `petstore serve` on a real port, the
// page opened in Chromium (the system's browser, driven by playwright-core),
// a real key entered under Authorize, and an operation sent from the page.
// A screenshot of the page at the end is saved under test-results/ for a
// person to look at.
import { after, before, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { PROJECT_ROOT, createKey, makeTempDir, removeTempDir, sqliteUrl, startServer, type ServerProcess } from '../support/process.js'

/** Every Playwright wait (a click, a selector, a navigation) fails after this instead of hanging. */
const STEP_TIMEOUT_MS = 15_000
/** Starting Chromium takes about a second; a loaded machine may need far longer. */
const LAUNCH_TIMEOUT_MS = 60_000
const SCREENSHOT = join(PROJECT_ROOT, 'test-results', 'docs-page.png')
/** Each operation as the page lists it: its method and path, and whether it is marked deprecated. */
const OPERATIONS = [
  { tag: 'pets', id: 'listPets', method: 'GET', path: '/pets', deprecated: false },
  { tag: 'pets', id: 'createPet', method: 'POST', path: '/pets', deprecated: false },
  { tag: 'pets', id: 'getPet', method: 'GET', path: '/pets/{petId}', deprecated: true },
  { tag: 'limits', id: 'getRateLimit', method: 'GET', path: '/rate_limit', deprecated: false },
  { tag: 'leaks', id: 'reportLeakedTokens', method: 'POST', path: '/secret-scanning', deprecated: false },
  { tag: 'leaks', id: 'revokeCredentials', method: 'POST', path: '/credentials/revoke', deprecated: false },
  // The events a partner's endpoint may receive: Swagger UI shows an OpenAPI 3.1 webhook as an operation, by its name.
  { tag: 'webhooks', id: 'petCreatedEvent', method: 'POST', path: 'pet.created', deprecated: false },
  { tag: 'webhooks', id: 'webhookTestEvent', method: 'POST', path: 'webhook.test', deprecated: false }
]

/** The browser found or installed by `npm test` (scripts/services/chromium.js); fails, never skips, without it. */
function chromiumExecutable (): string {
  const path = process.env.PETSTORE_TEST_CHROMIUM
  if (path === undefined || path === '') {
    throw new Error('PETSTORE_TEST_CHROMIUM is not set: run the tests with npm test, which finds or installs Chromium')
  }
  return path
}

describe('The docs page, in Chromium', { timeout: 180_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let browser: Browser | undefined
  let context: BrowserContext | undefined
  let token = ''
  /** What went wrong on the page itself: console errors (CSP violations among them), uncaught exceptions, failed loads. */
  const problems: string[] = []
  /** Every URL the page requested. */
  const requested: string[] = []

  const running = (): ServerProcess => {
    assert.ok(server !== undefined, 'the server was not started')
    return server
  }

  /** A fresh tab on /v1/docs, once Swagger UI has rendered the operations. */
  async function openDocs (): Promise<Page> {
    assert.ok(context !== undefined, 'the browser was not started')
    const page = await context.newPage()
    page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
    page.on('pageerror', (error) => { problems.push(`uncaught: ${error.message}`) })
    page.on('request', (request) => { requested.push(request.url()) })
    page.on('requestfailed', (request) => { problems.push(`failed: ${request.url()} (${request.failure()?.errorText ?? 'unknown'})`) })
    page.on('response', (response) => { if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`) })
    await page.goto(`${running().origin}/v1/docs`)
    await page.locator('.opblock').first().waitFor()
    return page
  }

  before(async () => {
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    server = await startServer(env)
    token = (await createKey(env, ['--plan', 'free', '--name', 'docs page'])).token
    browser = await chromium.launch({
      executablePath: chromiumExecutable(),
      headless: true,
      // Chromium refuses its sandbox to root (as npm test runs on a fresh
      // machine), and the only page it opens is the service's own.
      args: ['--no-sandbox'],
      timeout: LAUNCH_TIMEOUT_MS
    })
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    context.setDefaultTimeout(STEP_TIMEOUT_MS)
    context.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)
  })

  after(async () => {
    await browser?.close().catch(() => undefined)
    await server?.dispose()
    removeTempDir(dir)
  })

  it('When /v1/docs is opened, then it shows listPets, createPet, getPet, getRateLimit, reportLeakedTokens, revokeCredentials and the events pet.created and webhook.test, and getPet as deprecated', async () => {
    // Act
    const page = await openDocs()

    // Assert
    assert.deepEqual(await page.locator('.opblock').evaluateAll((blocks) => blocks.map((block) => block.id)),
      OPERATIONS.map(({ tag, id }) => `operations-${tag}-${id}`))
    for (const { tag, id, method, path, deprecated } of OPERATIONS) {
      const block = page.locator(`#operations-${tag}-${id}`)
      await block.waitFor({ state: 'visible' })
      assert.equal(await block.locator('.opblock-summary-method').innerText(), method, id)
      assert.equal(await block.locator('[data-path]').getAttribute('data-path'), path, id)
      // Swagger UI greys out a deprecated operation's block and strikes through its path.
      const classes = `${await block.getAttribute('class') ?? ''} ${await block.locator('[data-path]').getAttribute('class') ?? ''}`.split(/\s+/)
      assert.equal(classes.includes('opblock-deprecated'), deprecated, `${id}: ${classes.join(' ')}`)
      assert.equal(classes.includes('opblock-summary-path__deprecated'), deprecated, `${id}: ${classes.join(' ')}`)
    }
    await page.close()
  })

  it('When /v1/docs is opened, then the link under its title is /v1/openapi.json, the document the page was built from', async () => {
    // Arrange
    const documentUrl = `${running().origin}/v1/openapi.json`

    // Act
    const page = await openDocs()

    // Assert
    const link = page.locator('.info .main a:has(.url)')
    assert.equal(await link.getAttribute('href'), documentUrl)
    assert.equal((await link.innerText()).trim(), documentUrl)
    assert.ok(requested.includes(documentUrl), requested.join('\n'))
    assert.deepEqual(requested.filter((url) => new URL(url).pathname === '/v1/docs/json'), [])
    await page.close()
  })

  it('When a key is entered under Authorize and listPets is executed from the page, then the page shows the 200 and its rate-limit headers', async (t: TestContext) => {
    // Arrange
    const page = await openDocs()
    const listPets = page.locator('#operations-pets-listPets')
    try {
      // Act
      await page.locator('.auth-wrapper .authorize').click()
      await page.locator('#auth-bearer-value').fill(token)
      await page.getByRole('button', { name: 'Apply credentials' }).click()
      await page.locator('.auth-container').getByText('Authorized').waitFor()
      await page.getByRole('button', { name: 'Close' }).click()
      await listPets.locator('.opblock-summary').click()
      await listPets.getByRole('button', { name: 'Try it out' }).click()
      const answered = page.waitForResponse((response) => response.url().startsWith(`${running().origin}/v1/pets?`))
      await listPets.getByRole('button', { name: 'Execute' }).click()
      const response = await answered
      const shown = listPets.locator('.live-responses-table .response')
      await shown.waitFor()

      // Assert: the request reached this instance with the key, and the page shows what it answered.
      assert.equal(response.request().headers().authorization, `Bearer ${token}`)
      assert.equal(response.status(), 200, await response.text())
      assert.equal((await shown.locator('.response-col_status').innerText()).trim(), '200')
      const headers = new Map((await shown.locator('.headerline').allInnerTexts()).map((line) => {
        const colon = line.indexOf(':')
        return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()]
      }))
      assert.equal(headers.get('x-ratelimit-limit'), '60', [...headers].join('\n'))
      assert.equal(headers.get('x-ratelimit-remaining'), '59', [...headers].join('\n'))
      assert.match(headers.get('x-ratelimit-reset') ?? '', /^\d+$/, [...headers].join('\n'))
      assert.equal(headers.get('x-ratelimit-reset'), response.headers()['x-ratelimit-reset'])
    } finally {
      // Saved on a failure too: the page as it stood is the first thing to look at.
      mkdirSync(join(PROJECT_ROOT, 'test-results'), { recursive: true })
      await page.screenshot({ path: SCREENSHOT, fullPage: true })
      t.diagnostic(`screenshot: ${SCREENSHOT}`)
      await page.close()
    }
  })

  it('When the page has been used, then it logged no error, failed no load, and loaded nothing from elsewhere', () => {
    // Assert
    assert.ok(requested.length > 0, 'the page requested nothing')
    assert.deepEqual(problems, [])
    assert.deepEqual(requested.filter((url) => !url.startsWith(`${running().origin}/`) && !url.startsWith('data:')), [])
  })
})
