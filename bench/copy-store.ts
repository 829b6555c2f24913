// How long `petstore copy-store` takes to move a large SQLite store to
// PostgreSQL, and back (docs/SCALING.md: The move from SQLite to PostgreSQL). The store is
// filled straight into the file, much faster than through the service:
// 10,000 keys (one in ten rolled, with its previous token in its overlap;
// one in twenty revoked), 100,000 animals, 30 days of usage for 1,000 keys
// 10,000 idempotency records and the two secrets. PostgreSQL is a throwaway cluster of its
// own, unless `--to postgres://…` names an empty database.
//
//   npm run build && node dist/bench/copy-store.js [--to postgres://…]
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from '../src/db/sqlite/driver.js'
import { openSqlite } from '../src/db/sqlite/storage.js'
import { generateToken, hashToken, tokenHint } from '../src/keys/tokens.js'
import { PostgresCluster } from '../test/support/postgres-cluster.js'
import { CLI, PROJECT_ROOT } from '../test/support/process.js'

const KEYS = 10_000
const PETS = 100_000
const USAGE_KEYS = 1_000
const USAGE_DAYS = 30
const IDEMPOTENCY_RECORDS = 10_000
const DAY_MS = 86_400_000

function log (message: string): void {
  process.stderr.write(`copy-store bench: ${message}\n`)
}

function fill (path: string): void {
  const db = new Database(path)
  const now = Date.now()
  const today = Math.floor(now / DAY_MS)
  const key = db.prepare(`INSERT INTO api_keys (id, name, plan, environment, token_hash, token_hint, created_at, revoked_at,
    previous_token_hash, previous_token_expires_at) VALUES (?, ?, 'pro', 'production', ?, ?, ?, ?, ?, ?)`)
  const token = db.prepare('INSERT INTO api_key_tokens (api_key_id, token_hash) VALUES (?, ?)')
  const pet = db.prepare("INSERT INTO pets (name, category_id, status) VALUES (?, ?, 'available')")
  const usage = db.prepare('INSERT INTO key_usage (api_key_id, day, admitted, refused) VALUES (?, ?, ?, ?)')
  const idempotency = db.prepare('INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES (?, ?, ?, ?, ?)')
  db.transaction(() => {
    for (let id = 1; id <= KEYS; id++) {
      const current = generateToken('production')
      const previous = id % 10 === 0 ? hashToken(generateToken('production')) : null
      key.run(id, `key ${id}`, hashToken(current), tokenHint(current), now - DAY_MS, id % 20 === 0 ? now : null,
        previous, previous === null ? null : now + DAY_MS)
      if (previous !== null) token.run(id, previous)
      token.run(id, hashToken(current))
    }
    for (let i = 1; i <= PETS; i++) pet.run(`animal ${i}`, i)
    for (let id = 1; id <= USAGE_KEYS; id++) {
      for (let day = today - USAGE_DAYS + 1; day <= today; day++) usage.run(id, day, 1000 + id, id % 7)
    }
    for (const name of ['cursor', 'deployment']) db.prepare('INSERT INTO secrets (name, value) VALUES (?, ?)').run(name, randomBytes(32))
    for (let i = 1; i <= IDEMPOTENCY_RECORDS; i++) idempotency.run(1 + (i % KEYS), `request-${i}`, 'f'.repeat(64), i, now)
  })()
  db.close()
}

/** Runs `petstore copy-store --to URL` on `source` and gives its output and wall time, the start of Node.js included. */
async function copy (source: string, to: string): Promise<{ seconds: number, output: string }> {
  const started = performance.now()
  const child = spawn(process.execPath, [CLI, 'copy-store', '--to', to], { cwd: PROJECT_ROOT, env: { ...process.env, DATABASE_URL: source } })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  if (code !== 0) throw new Error(`copy-store exited with ${code}: ${output}`)
  return { seconds: (performance.now() - started) / 1000, output }
}

const toIndex = process.argv.indexOf('--to')
const givenTarget = toIndex === -1 ? undefined : process.argv[toIndex + 1]
const dir = mkdtempSync(join(tmpdir(), 'petstore-copy-bench-'))
// PostgreSQL runs as a user of its own and must reach its folder inside.
chmodSync(dir, 0o755)
let cluster: PostgresCluster | undefined
try {
  const sqlite = `sqlite:${join(dir, 'source.db')}`
  await openSqlite(sqlite).close()
  const filling = performance.now()
  fill(join(dir, 'source.db'))
  log(`filled ${join(dir, 'source.db')} (${(statSync(join(dir, 'source.db')).size / 1e6).toFixed(0)} MB) in ${((performance.now() - filling) / 1000).toFixed(1)} s`)
  let postgres = givenTarget
  if (postgres === undefined) {
    cluster = await PostgresCluster.start({ dir: join(dir, 'postgres'), log })
    postgres = cluster.url
  }
  const there = await copy(sqlite, postgres)
  process.stdout.write(`SQLite → PostgreSQL: ${there.seconds.toFixed(1)} s\n${there.output}`)
  const back = await copy(postgres, `sqlite:${join(dir, 'back.db')}`)
  process.stdout.write(`PostgreSQL → SQLite: ${back.seconds.toFixed(1)} s\n${back.output}`)
} finally {
  await cluster?.stop()
  rmSync(dir, { recursive: true, force: true })
}
