// The `petstore` command: `serve`, and `keys create|list|revoke` for operators.
// It reads the same DATABASE_URL and PETSTORE_ENV as the server.
import { Command, InvalidArgumentError, Option } from 'commander'
import { ConfigError, loadConfig, type Config } from '../config.js'
import { openStorage } from '../db/open.js'
import type { Storage } from '../db/storage.js'
import { issueKey, listKeys } from '../keys/admin.js'
import { PLANS, type Plan } from '../domain.js'
import { serve } from '../server.js'

function positiveInteger (value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer')
  return Number(value)
}

async function withStorage<T> (work: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig()
  const storage = await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize })
  try {
    return await work(storage, config)
  } finally {
    await storage.close()
  }
}

const program = new Command('petstore')
  .description('The animal adoption store service.')
  .showHelpAfterError()

program.command('serve')
  .description('run the HTTP service (configured by environment variables: see the README)')
  .action(async () => { await serve() })

const keys = program.command('keys').description('manage API keys')

keys.command('create')
  .description('create an API key and print its secret token (shown only this once)')
  .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS).makeOptionMandatory())
  .option('--name <label>', 'a label for the key', '')
  .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan)', positiveInteger)
  .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan)', positiveInteger)
  .option('--json', 'print one JSON object')
  .action(async (options: { plan: Plan, name: string, perMinute?: number, perDay?: number, json?: boolean }) => {
    const key = await withStorage((storage, config) => issueKey(storage, {
      plan: options.plan,
      name: options.name,
      perMinute: options.perMinute,
      perDay: options.perDay,
      environment: config.environment,
      now: Date.now()
    }))
    if (options.json === true) {
      process.stdout.write(JSON.stringify(key) + '\n')
      return
    }
    process.stdout.write(
      `Created ${key.environment} key ${key.id}${key.name === '' ? '' : ` (${key.name})`}: plan ${key.plan}, ` +
      `${key.perMinute} requests a minute, ${key.perDay} a day.\n` +
      'The token below is shown only this once; store it now.\n' +
      `${key.token}\n`)
  })

keys.command('list')
  .description('list API keys (never their secrets)')
  .option('--json', 'print a JSON array')
  .action(async (options: { json?: boolean }) => {
    const all = await withStorage(listKeys)
    if (options.json === true) {
      process.stdout.write(JSON.stringify(all) + '\n')
      return
    }
    const rows = all.map((k) => [String(k.id), k.name, k.plan, String(k.perMinute), String(k.perDay), k.environment, k.created, k.revokedAt ?? 'no'])
    const header = ['ID', 'NAME', 'PLAN', 'PER MINUTE', 'PER DAY', 'ENVIRONMENT', 'CREATED', 'REVOKED']
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
    for (const row of [header, ...rows]) {
      process.stdout.write(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd() + '\n')
    }
  })

keys.command('revoke')
  .description('revoke an API key: every instance refuses it within one second')
  .argument('<id>', 'the key id, as `keys list` shows it', positiveInteger)
  .action(async (id: number) => {
    const revoked = await withStorage((storage) => storage.revokeApiKey(id, Date.now()))
    if (!revoked) {
      process.stderr.write(`petstore: no active key has the id ${id}; see \`petstore keys list\`\n`)
      process.exitCode = 1
      return
    }
    process.stdout.write(`Revoked key ${id}.\n`)
  })

program.parseAsync().catch((error: unknown) => {
  const message = error instanceof ConfigError ? `configuration: ${error.message}` : (error instanceof Error ? error.message : String(error))
  process.stderr.write(`petstore: ${message}\n`)
  process.exit(1)
})
