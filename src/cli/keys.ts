// `petstore keys create|list|revoke`: API keys for operators, in the
// database the server reads (DATABASE_URL, PETSTORE_ENV).
import { type Command, InvalidArgumentError, Option } from 'commander'
import { loadConfig, type Config } from '../config.js'
import type { Storage } from '../db/storage.js'
import { PLANS, type Plan } from '../domain.js'
import { issueKey, listKeys, type KeyView } from '../keys/admin.js'
import { asDatabaseFailure, databaseLabel, openKeysDatabase } from './database.js'
import { CommandFailure, EXIT_USAGE } from './errors.js'
import { formatTable, printable, type Column } from './table.js'

/** Names are the one free-text column: past this many columns they are cut in the table (`--json` has them whole). */
const NAME_COLUMNS = 40

function positiveInteger (value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer')
  return Number(value)
}

async function withStorage<T> (work: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig()
  const storage = await openKeysDatabase(config)
  try {
    return await work(storage, config)
  } catch (error) {
    throw await asDatabaseFailure(config.databaseUrl, error, 'use')
  } finally {
    await storage.close()
  }
}

function write (text: string): void {
  process.stdout.write(text)
}

const KEY_COLUMNS: readonly Column[] = [
  { title: 'ID', align: 'right' },
  { title: 'NAME', maxWidth: NAME_COLUMNS },
  { title: 'PLAN' },
  { title: 'PER MINUTE', align: 'right' },
  { title: 'PER DAY', align: 'right' },
  { title: 'ENVIRONMENT' },
  { title: 'CREATED' },
  { title: 'REVOKED' }
]

function keyRow (key: KeyView): string[] {
  return [String(key.id), key.name, key.plan, String(key.perMinute), String(key.perDay), key.environment, key.created, key.revokedAt ?? 'no']
}

interface CreateOptions { plan: Plan, name?: string, perMinute?: number, perDay?: number, json?: boolean }

export function addKeysCommands (program: Command): void {
  const keys = program.command('keys').description('manage API keys (in the database of DATABASE_URL, for PETSTORE_ENV)')

  keys.command('create')
    .description('create an API key and print its secret token, alone on the last line (shown only this once)')
    .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS).makeOptionMandatory())
    .option('--name <label>', 'a label for the key')
    .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan)', positiveInteger)
    .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan)', positiveInteger)
    .option('--json', 'print one JSON object (id, name, plan, limits, token, …)')
    .action(async (options: CreateOptions, command: Command) => {
      // Checked before the database is opened: it is the command line that is incomplete.
      if (options.plan === 'enterprise' && (options.perMinute === undefined || options.perDay === undefined)) {
        command.error('an enterprise key needs --per-minute and --per-day', { exitCode: EXIT_USAGE, code: 'petstore.enterpriseLimits' })
      }
      const key = await withStorage(async (storage, config) => await issueKey(storage, {
        plan: options.plan,
        name: options.name ?? '',
        perMinute: options.perMinute,
        perDay: options.perDay,
        environment: config.environment,
        now: Date.now()
      }))
      if (options.json === true) {
        write(JSON.stringify(key) + '\n')
        return
      }
      write(
        `Created ${key.environment} key ${key.id}${key.name === '' ? '' : ` (${printable(key.name)})`}: plan ${key.plan}, ` +
        `${key.perMinute} requests a minute, ${key.perDay} a day.\n` +
        'The token below is shown only this once; store it now.\n' +
        `${key.token}\n`)
    })

  keys.command('list')
    .description('list API keys, oldest first (never their secrets)')
    .option('--json', 'print a JSON array of objects (id, name, plan, limits, created, revoked, …)')
    .action(async (options: { json?: boolean }) => {
      const { all, url } = await withStorage(async (storage, config) => ({ all: await listKeys(storage), url: config.databaseUrl }))
      if (options.json === true) {
        write(JSON.stringify(all) + '\n')
      } else if (all.length === 0) {
        write(`No API keys in ${databaseLabel(url)}; create one with \`petstore keys create --plan PLAN\`.\n`)
      } else {
        write(formatTable(KEY_COLUMNS, all.map(keyRow)))
      }
    })

  keys.command('revoke')
    .description('revoke an API key: every instance refuses it within one second')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .action(async (id: number) => {
      const revoked = await withStorage(async (storage) => await storage.revokeApiKey(id, Date.now()))
      if (!revoked) throw new CommandFailure(`no active key has the id ${id}; see \`petstore keys list\``)
      write(`Revoked key ${id}.\n`)
    })
}
