// `petstore keys create|list|show|revoke`: API keys for operators, in the
// database the server reads (DATABASE_URL, PETSTORE_ENV).
import { type Command, InvalidArgumentError, Option } from 'commander'
import { loadConfig, type Config } from '../config.js'
import type { Storage } from '../db/storage.js'
import { PLANS, SCOPES, type Plan, type Scope } from '../domain.js'
import { issueKey, listKeys, revokeKey, showKey, type KeyView } from '../keys/manage.js'
import { asDatabaseFailure, databaseLabel, openKeysDatabase } from './database.js'
import { CommandFailure, EXIT_USAGE } from './errors.js'
import { formatTable, printable, type Column } from './table.js'

/** Names are the one free-text column: past this many columns they are cut in the table (`--json` has them whole). */
const NAME_COLUMNS = 40

function positiveInteger (value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer')
  return Number(value)
}

/** `pets:read,pets:write`: each one a known scope. */
function scopeList (value: string): Scope[] {
  const named = value.split(',').map((scope) => scope.trim())
  const unknown = named.find((scope) => !(SCOPES as readonly string[]).includes(scope))
  if (unknown !== undefined) throw new InvalidArgumentError(`unknown scope '${unknown}'; the scopes are ${SCOPES.join(', ')}`)
  return named as Scope[]
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2}))?$/

/** An instant in the future, as RFC 3339 (`2027-03-10T12:00:00Z`) or a date (`2027-03-10`: its first instant, UTC). */
function futureInstant (value: string): number {
  const match = RFC3339.exec(value)
  // Date.parse takes 30 February as 2 March: the date is checked on its own.
  const [year, month, day] = [match?.[1], match?.[2], match?.[3]].map(Number) as [number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day))
  const at = match === null ? NaN : Date.parse(match[4] === undefined ? `${value}T00:00:00Z` : value)
  if (Number.isNaN(at) || date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw new InvalidArgumentError('must be an RFC 3339 time (2027-03-10T12:00:00Z) or a date (2027-03-10)')
  }
  if (at <= Date.now()) throw new InvalidArgumentError('must be in the future')
  return at
}

const DURATION_UNITS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30m`, `12h`, `90d`: a positive number of minutes, hours or days, in milliseconds. */
function duration (value: string): number {
  const match = /^([1-9]\d{0,5})([mhd])$/.exec(value)
  if (match === null) throw new InvalidArgumentError('must be a positive number of minutes, hours or days: 30m, 12h, 90d')
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number)
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
  { title: 'SCOPES' },
  { title: 'ENVIRONMENT' },
  { title: 'TOKEN' },
  { title: 'CREATED' },
  { title: 'EXPIRES' },
  { title: 'REVOKED' }
]

function keyRow (key: KeyView): string[] {
  return [
    String(key.id), key.name, key.plan, String(key.perMinute), String(key.perDay), key.scopes.join(','), key.environment,
    key.tokenHint, key.createdAt, key.expiresAt ?? 'never', key.revokedAt ?? 'no'
  ]
}

interface CreateOptions {
  plan: Plan
  name?: string
  perMinute?: number
  perDay?: number
  scopes?: Scope[]
  expiresAt?: number
  expiresIn?: number
  json?: boolean
}

export function addKeysCommands (program: Command): void {
  const keys = program.command('keys').description('manage API keys (in the database of DATABASE_URL, for PETSTORE_ENV)')

  keys.command('create')
    .description('create an API key and print its secret token, alone on the last line (shown only this once)')
    .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS).makeOptionMandatory())
    .option('--name <label>', 'a label for the key')
    .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan)', positiveInteger)
    .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan)', positiveInteger)
    .option('--scopes <scopes>', `what the key may do, comma-separated: ${SCOPES.join(', ')} (default: both)`, scopeList)
    .addOption(new Option('--expires-at <date>', 'when the key stops working: an RFC 3339 time, or a date (its start, UTC)').argParser(futureInstant).conflicts('expiresIn'))
    .option('--expires-in <duration>', 'how long the key works: minutes, hours or days (30m, 12h, 90d)', duration)
    .option('--json', 'print one JSON object (id, name, plan, limits, scopes, expiresAt, tokenHint, token, …)')
    .action(async (options: CreateOptions, command: Command) => {
      // Checked before the database is opened: it is the command line that is incomplete.
      if (options.plan === 'enterprise' && (options.perMinute === undefined || options.perDay === undefined)) {
        command.error('an enterprise key needs --per-minute and --per-day', { exitCode: EXIT_USAGE, code: 'petstore.enterpriseLimits' })
      }
      const now = Date.now()
      const key = await withStorage(async (storage, config) => await issueKey(storage, {
        plan: options.plan,
        name: options.name ?? '',
        perMinute: options.perMinute,
        perDay: options.perDay,
        scopes: options.scopes,
        expiresAt: options.expiresAt ?? (options.expiresIn === undefined ? null : now + options.expiresIn),
        environment: config.environment,
        now
      }))
      if (options.json === true) {
        write(JSON.stringify(key) + '\n')
        return
      }
      write(
        `Created ${key.environment} key ${key.id}${key.name === '' ? '' : ` (${printable(key.name)})`}: plan ${key.plan}, ` +
        `${key.perMinute} requests a minute, ${key.perDay} a day; scopes ${key.scopes.join(', ')}; ` +
        `${key.expiresAt === null ? 'never expires' : `expires ${key.expiresAt}`}.\n` +
        'The token below is shown only this once; store it now.\n' +
        `${key.token}\n`)
    })

  keys.command('list')
    .description('list API keys, oldest first (never their secrets)')
    .option('--json', 'print a JSON array of objects (id, name, plan, limits, scopes, tokenHint, created, expiresAt, lastUsedAt, revoked, …)')
    .action(async (options: { json?: boolean }) => {
      const { all, url } = await withStorage(async (storage, config) => ({ all: await listKeys(storage, Date.now()), url: config.databaseUrl }))
      if (options.json === true) {
        write(JSON.stringify(all) + '\n')
      } else if (all.length === 0) {
        write(`No API keys in ${databaseLabel(url)}; create one with \`petstore keys create --plan PLAN\`.\n`)
      } else {
        write(formatTable(KEY_COLUMNS, all.map(keyRow)))
      }
    })

  keys.command('show')
    .description('show one API key (never its secret)')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .option('--json', 'print one JSON object, as one element of `keys list --json`')
    .action(async (id: number, options: { json?: boolean }) => {
      const key = await withStorage(async (storage) => await showKey(storage, id, Date.now()))
      if (key === undefined) throw new CommandFailure(`no key has the id ${id}; see \`petstore keys list\``)
      if (options.json === true) {
        write(JSON.stringify(key) + '\n')
        return
      }
      const row = keyRow(key)
      write(KEY_COLUMNS.map((column, i) => `${column.title.toLowerCase()}: ${printable(row[i] ?? '')}\n`).join(''))
    })

  keys.command('revoke')
    .description('revoke an API key: every instance refuses it within one second')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .action(async (id: number) => {
      const revoked = await withStorage(async (storage) => await revokeKey(storage, id, Date.now()))
      if (revoked === undefined) throw new CommandFailure(`no key has the id ${id}; see \`petstore keys list\``)
      write(`Revoked key ${id}.\n`)
    })
}
