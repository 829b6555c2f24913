// The operator console as its end-to-end tests drive it: `petstore serve`
// with the admin listener on, and Chromium (the system's browser, found by
// scripts/run-tests.js, driven by playwright-core) opening /admin/ in fresh
// tabs whose errors, CSP violations, failed loads and requests are recorded.
import assert from 'node:assert/strict'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { startServer, type ServerProcess } from './process.js'

/** Every Playwright wait (a click, a selector, a navigation) fails after this instead of hanging. */
export const STEP_TIMEOUT_MS = 15_000
/** Starting Chromium takes about a second; a loaded machine may need far longer. */
const LAUNCH_TIMEOUT_MS = 60_000
/** Every change holds within a second (docs/KEYS.md: The admin API); a loaded machine gets more. */
export const CHANGE_TIMEOUT_MS = 10_000

export interface Opened {
  page: Page
  /** What went wrong on this page: console errors (CSP violations among them), uncaught exceptions, failed loads, HTTP errors. */
  problems: string[]
  /** Every URL this page requested. */
  requested: string[]
  /** The answer to GET /admin/. */
  headers: Record<string, string>
}

/** The browser found or installed by `npm test` (scripts/services/chromium.js); fails, never skips, without it. */
function chromiumExecutable (): string {
  const path = process.env.PETSTORE_TEST_CHROMIUM
  if (path === undefined || path === '') {
    throw new Error('PETSTORE_TEST_CHROMIUM is not set: run the tests with npm test, which finds or installs Chromium')
  }
  return path
}

/** `petstore serve` with `env` (ADMIN_PORT and ADMIN_TOKEN among it), and http://127.0.0.1:ADMIN_PORT as its started line reports it. */
export async function startConsoleServer (env: Record<string, string>): Promise<{ server: ServerProcess, adminOrigin: string }> {
  const server = await startServer(env)
  await server.waitForStdout((out) => out.includes('petstore started'), 5_000, 'the started line')
  const adminOrigin = /"adminApi":"(http:\/\/127\.0\.0\.1:\d+)\/admin\/v1"/.exec(server.stdout)?.[1]
  assert.ok(adminOrigin !== undefined, `no admin API address in:\n${server.stdout}`)
  return { server, adminOrigin }
}

/** The fields of the `petstore started` line `server` wrote. */
export function startedLine (server: ServerProcess): Record<string, unknown> {
  const line = server.stdout.split('\n').find((text) => text.includes('"msg":"petstore started"'))
  assert.ok(line !== undefined, `no started line in:\n${server.stdout}`)
  return JSON.parse(line) as Record<string, unknown>
}

/** Chromium, headless, and a context whose pages log each CSP violation as a console error. */
export async function launchChromium (): Promise<{ browser: Browser, context: BrowserContext }> {
  const browser = await chromium.launch({
    executablePath: chromiumExecutable(),
    headless: true,
    // Chromium refuses its sandbox to root (as npm test runs on a fresh
    // machine), and the only pages it opens are the service's own.
    args: ['--no-sandbox'],
    timeout: LAUNCH_TIMEOUT_MS
  })
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } })
  context.setDefaultTimeout(STEP_TIMEOUT_MS)
  context.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)
  // Chromium logs a CSP violation as a console error; the event says it in the page's own words too.
  // (A string: the test is compiled without the browser's types.)
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) => {
      console.error('CSP violation: ' + event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline'))
    })`
  })
  return { browser, context }
}

/** A fresh tab (so a fresh session storage) on /admin/, its problems and requests recorded. */
export async function openTab (context: BrowserContext, adminOrigin: string): Promise<Opened> {
  const page = await context.newPage()
  const problems: string[] = []
  const requested: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
  page.on('pageerror', (error) => { problems.push(`uncaught: ${error.message}`) })
  page.on('request', (request) => { requested.push(request.url()) })
  page.on('requestfailed', (request) => { problems.push(`failed: ${request.url()} (${request.failure()?.errorText ?? 'unknown'})`) })
  page.on('response', (response) => { if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`) })
  const response = await page.goto(`${adminOrigin}/admin/`)
  assert.ok(response !== null)
  assert.equal(response.status(), 200)
  return { page, problems, requested, headers: response.headers() }
}

/** What `requested` asked of anything but the admin listener. */
export function elsewhere (adminOrigin: string, requested: string[]): string[] {
  return requested.filter((url) => !url.startsWith(`${adminOrigin}/`) && !url.startsWith('data:'))
}

/** An admin API call with `token`: its JSON body; anything but a 2xx fails. */
export async function adminCall<T> (adminOrigin: string, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${adminOrigin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`)
  return JSON.parse(text) as T
}

/** Signs in with `token` and waits until the first view is drawn: the overview and a page of keys. */
export async function signIn (page: Page, token: string): Promise<void> {
  await page.locator('#admin-token').fill(token)
  await page.locator('#sign-in button[type=submit]').click()
  await page.locator('#keys-view').waitFor({ state: 'visible' })
  await rendered(page)
}

/** Waits until the list view is drawn: the overview's totals and chart, and the table's rows. */
export async function rendered (page: Page): Promise<void> {
  await page.locator('#overview-totals[data-admitted]').waitFor()
  await page.locator('#overview-chart canvas').waitFor()
  await page.locator('#keys tr').first().waitFor()
}
