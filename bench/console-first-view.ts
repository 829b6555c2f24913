// The operator console's first view with many keys, in Chromium
// (docs/PERFORMANCE.md: The console with 10,000 keys). A SQLite database
// gets KEYS keys, written straight in one transaction, each with 30 days of
// usage; `petstore serve` is started on it with the admin listener, and the
// console is opened RUNS times in a fresh browser context (no cache). Each
// run reports the time from navigation to the first view drawn (the
// overview's chart and totals and the first page of keys), with the admin
// token already in the tab, and the requests the page made.
//   node dist/bench/console-first-view.js [--keys 10000] [--runs 7] [--warm-server]
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { chromium } from 'playwright-core'
import { openSqlite } from '../src/db/sqlite/storage.js'
import { Database } from '../src/db/sqlite/driver.js'
import { databaseFile, makeTempDir, removeTempDir, sqliteUrl, startServer } from '../test/support/process.js'

const ADMIN_TOKEN = 'bench-4Yq8Zt1Rx6Kp9Lm2Vb3Hc7Nd0Fg5Jsw'
const DAY_MS = 86_400_000
const PLANS = ['free', 'pro', 'business'] as const

const { values } = parseArgs({ options: { keys: { type: 'string', default: '10000' }, runs: { type: 'string', default: '7' }, 'warm-server': { type: 'boolean', default: false } } })
const KEYS = Number(values.keys)
const RUNS = Number(values.runs)

/** Keys and their usage, as the service would have stored them: a tenth revoked, a tenth expired, most used in the last 30 days. */
async function seed (url: string, file: string): Promise<void> {
  await openSqlite(url).close()
  const db = new Database(file)
  const now = Date.now()
  const today = Math.floor(now / DAY_MS)
  const key = db.prepare('INSERT INTO api_keys (name, plan, environment, token_hash, token_hint, created_at, expires_at, last_used_at, revoked_at) VALUES (?, ?, \'production\', ?, ?, ?, ?, ?, ?) RETURNING id')
  const token = db.prepare('INSERT INTO api_key_tokens (api_key_id, token_hash) VALUES (?, ?)')
  const usage = db.prepare('INSERT INTO key_usage (api_key_id, day, admitted, refused) VALUES (?, ?, ?, ?)')
  db.transaction(() => {
    for (let i = 1; i <= KEYS; i++) {
      const hash = randomBytes(32).toString('hex')
      const { id } = key.get(`customer ${i}`, PLANS[i % PLANS.length], hash, `pet_live_…${hash.slice(0, 4)}`, BigInt(now - 90 * DAY_MS),
        i % 10 === 1 ? BigInt(now - DAY_MS) : null, i % 7 === 0 ? null : BigInt(now - (i % 1000) * 60_000), i % 10 === 2 ? BigInt(now - DAY_MS) : null) as { id: bigint }
      token.run(id, hash)
      if (i % 7 !== 0) for (let day = today - 29; day <= today; day++) usage.run(id, BigInt(day), BigInt((i * day) % 500), BigInt((i + day) % 7))
    }
  })()
  db.close()
}

async function main (): Promise<void> {
  const dir = makeTempDir()
  const url = sqliteUrl(dir)
  const seeding = Date.now()
  await seed(url, databaseFile(dir))
  console.log(`seeded ${KEYS} keys with 30 days of usage in ${Date.now() - seeding} ms`)
  const server = await startServer({ DATABASE_URL: url, ADMIN_PORT: '0', ADMIN_TOKEN })
  const browser = await chromium.launch({ executablePath: process.env.PETSTORE_TEST_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] })
  try {
    await server.waitForStdout((out) => out.includes('petstore started'), 10_000, 'the started line')
    const origin = /"adminApi":"(http:\/\/127\.0\.0\.1:\d+)\/admin\/v1"/.exec(server.stdout)?.[1]
    if (origin === undefined) throw new Error(`no admin API address in:\n${server.stdout}`)
    // Tells a first run's cost apart: the service's (its first overview) or the browser's (its first context).
    if (values['warm-server']) await (await fetch(`${origin}/admin/v1/overview`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).arrayBuffer()
    const runs: Array<{ ms: number, requests: number, apiRequests: string[], resources: string[] }> = []
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 900 } })
      await context.addInitScript({ content: `sessionStorage.setItem('petstore-admin-token', ${JSON.stringify(ADMIN_TOKEN)})` })
      const page = await context.newPage()
      const requested: string[] = []
      page.on('request', (request) => { requested.push(request.url().replace(origin, '')) })
      await page.goto(`${origin}/admin/`)
      await page.locator('#overview-chart canvas').waitFor()
      await page.locator('#overview-totals[data-admitted]').waitFor()
      await page.locator('#keys tr[data-key]').first().waitFor()
      // Milliseconds since the navigation began: when the first view was found drawn.
      const ms = await page.evaluate('performance.now()') as number
      // Each resource's start and end, in ms since navigation began: where the time went.
      const resources = await page.evaluate('performance.getEntriesByType(\'resource\').map((e) => e.name.replace(location.origin, \'\') + \' \' + Math.round(e.startTime) + \'–\' + Math.round(e.responseEnd))') as string[]
      runs.push({ ms: Math.round(ms), requests: requested.length, apiRequests: requested.filter((path) => path.startsWith('/admin/v1/')), resources })
      await context.close()
    }
    const sorted = runs.map((r) => r.ms).sort((a, b) => a - b)
    console.log(JSON.stringify({ keys: KEYS, runsMs: runs.map((r) => r.ms), medianMs: sorted[Math.floor(sorted.length / 2)], maxMs: sorted.at(-1), requests: runs[0]?.requests, apiRequests: runs[0]?.apiRequests, resourcesOfLastRun: runs.at(-1)?.resources }, null, 2))
  } finally {
    await browser.close()
    await server.dispose()
    removeTempDir(dir)
  }
}

await main()
