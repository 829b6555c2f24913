// `petstore keys create|list|show|update|roll|find|revoke`: API keys for
// operators, in the database the server reads (DATABASE_URL, PETSTORE_ENV).
// Each command calls keys/manage.ts, as the admin API does, so both refuse
// the same things; here a refusal names the option rather than the field.
import { createInterface } from 'node:readline/promises'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { loadConfig, type Config } from '../config.js'
import type { KeyState, Storage } from '../db/storage.js'
import { KEY_SORTS, KEY_STATES, MAX_OVERLAP_SECONDS, PLANS, SCOPES, type Plan, type Scope } from '../domain.js'
import {
  KeyRevokedError, KeyRuleError, findKey, issueKey, keyUsage, revokeKey, rollKey, showKey, updateKey,
  type KeyUpdate, type KeyView
} from '../keys/manage.js'
import { INSTANT_FORMAT, readInstant } from '../instant.js'
import { searchKeys } from '../keys/overview.js'
import { inspectToken } from '../keys/tokens.js'
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

/** An instant in the future, as RFC 3339 (`2027-03-10T12:00:00Z`) or a date (`2027-03-10`: its first instant, UTC). */
function futureInstant (value: string): number {
  const reading = readInstant(value, 'timeOrDate')
  if (!reading.ok) {
    throw new InvalidArgumentError(reading.reason === INSTANT_FORMAT ? 'must be an RFC 3339 time (2027-03-10T12:00:00Z) or a date (2027-03-10)' : reading.reason)
  }
  if (reading.at <= Date.now()) throw new InvalidArgumentError('must be in the future')
  return reading.at
}

const DURATION_UNITS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30m`, `12h`, `90d`: a positive number of minutes, hours or days, in milliseconds. */
function duration (value: string): number {
  const match = /^([1-9]\d{0,5})([mhd])$/.exec(value)
  if (match === null) throw new InvalidArgumentError('must be a positive number of minutes, hours or days: 30m, 12h, 90d')
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number)
}

/** `0` (the current token stops at once) or a duration as `--expires-in` takes it, up to 7 days: in seconds. */
function overlap (value: string): number {
  if (value === '0') return 0
  let ms: number
  try {
    ms = duration(value)
  } catch {
    throw new InvalidArgumentError('must be 0 or a number of minutes, hours or days up to 7 days: 0, 30m, 12h, 7d')
  }
  if (ms > MAX_OVERLAP_SECONDS * 1000) throw new InvalidArgumentError('must be at most 7 days (7d, 168h, 10080m)')
  return ms / 1000
}

// Commander keeps an option whose parser returns null as an empty string: the words stay words until the action.

/** A future instant, or `never`. */
function instantOrNever (value: string): number | 'never' {
  return value === 'never' ? value : futureInstant(value)
}

/** A positive integer, or `plan`: the plan's limit again. */
function limitOrPlan (value: string): number | 'plan' {
  if (value === 'plan') return value
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('must be a positive integer, or `plan` for the plan\'s')
  return Number(value)
}

/** The option of each field a rule of keys names, as the admin API's body has it. */
const OPTION_OF_FIELD: Readonly<Record<string, string>> = {
  name: '--name',
  plan: '--plan',
  perMinute: '--per-minute',
  perDay: '--per-day',
  scopes: '--scopes',
  expiresAt: '--expires-at',
  expireCurrentInSeconds: '--expire-current-in',
  from: '--from',
  to: '--to'
}

/** A refusal by the rules of keys as one line naming the options, else `error` itself. */
function asKeyFailure (error: unknown): unknown {
  if (error instanceof KeyRuleError) {
    const reason = error.reason.replace(/\b(?:perMinute|perDay|expiresAt|expireCurrentInSeconds)\b/g, (field) => OPTION_OF_FIELD[field] ?? field)
    return new CommandFailure(`${OPTION_OF_FIELD[error.field] ?? error.field} ${reason}`, { cause: error })
  }
  if (error instanceof KeyRevokedError) {
    return new CommandFailure(`key ${error.id} is revoked; a revoked key cannot be changed or rolled`, { cause: error })
  }
  return error
}

async function withStorage<T> (work: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig()
  const storage = await openKeysDatabase(config)
  try {
    return await work(storage, config)
  } catch (error) {
    throw asKeyFailure(await asDatabaseFailure(config.databaseUrl, error, 'use'))
  } finally {
    await storage.close()
  }
}

/** More than any token, with room for a line ending: standard input longer than this is not one token. */
const MAX_TOKEN_INPUT = 1024

/**
 * The token on standard input, without one trailing line ending. From a
 * terminal, one line after a prompt on stderr; from a pipe or a file, all of
 * it. Never taken from the command line, which shells keep in their history.
 */
async function readToken (): Promise<string> {
  let text = ''
  if (process.stdin.isTTY) {
    const prompt = createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    try {
      text = await prompt.question('Token: ')
    } finally {
      prompt.close()
    }
  } else {
    for await (const chunk of process.stdin) {
      text += String(chunk)
      if (text.length > MAX_TOKEN_INPUT) throw new CommandFailure('standard input holds more than one token; give it the token alone')
    }
  }
  const token = text.replace(/\r?\n$/, '')
  if (token === '') {
    throw new CommandFailure('no token on standard input; give it there, never on the command line: `petstore keys find < FILE` or `… | petstore keys find`')
  }
  return token
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

const USAGE_COLUMNS: readonly Column[] = [
  { title: 'DATE' },
  { title: 'ADMITTED', align: 'right' },
  { title: 'REFUSED', align: 'right' }
]

function keyRow (key: KeyView): string[] {
  return [
    String(key.id), key.name, key.plan, String(key.perMinute), String(key.perDay), key.scopes.join(','), key.environment,
    key.tokenHint, key.createdAt, key.expiresAt ?? 'never', key.revokedAt ?? 'no'
  ]
}

/** One key for people, a field a line, as `keys show` prints it; for scripts, one JSON object. */
function writeKey (key: KeyView, json: boolean | undefined): void {
  if (json === true) {
    write(JSON.stringify(key) + '\n')
    return
  }
  const row = keyRow(key)
  const fields: Array<[string, string]> = KEY_COLUMNS.map((column, i) => [column.title.toLowerCase(), row[i] ?? ''])
  fields.push(['last used', key.lastUsedAt ?? 'never'])
  if (key.previousTokenExpiresAt !== null) fields.push(['previous token until', key.previousTokenExpiresAt])
  write(fields.map(([name, value]) => `${name}: ${printable(value)}\n`).join(''))
}

function noSuchKey (id: number): CommandFailure {
  return new CommandFailure(`no key has the id ${id}; see \`petstore keys list\``)
}

interface UpdateOptions {
  name?: string
  plan?: Plan
  perMinute?: number | 'plan'
  perDay?: number | 'plan'
  scopes?: Scope[]
  expiresAt?: number | 'never'
  json?: boolean
}

/** The words an option may take instead of a value, as null: back to the plan's limit, or no expiry. */
function asKeyUpdate ({ json: _json, perMinute, perDay, expiresAt, ...rest }: UpdateOptions): KeyUpdate {
  const update: KeyUpdate = { ...rest }
  if (perMinute !== undefined) update.perMinute = perMinute === 'plan' ? null : perMinute
  if (perDay !== undefined) update.perDay = perDay === 'plan' ? null : perDay
  if (expiresAt !== undefined) update.expiresAt = expiresAt === 'never' ? null : expiresAt
  return update
}

interface ListOptions {
  search?: string
  state?: KeyState
  plan?: Plan
  sort: typeof KEY_SORTS[number]
  json?: boolean
}

/** The admin API's largest page: the same queries as the console's list, read to the end. */
const LIST_PAGE = 100

/** Every key that matches, page after page, in the order asked for. */
async function everyMatch (storage: Storage, { search, state, plan, sort }: ListOptions): Promise<KeyView[]> {
  const all: KeyView[] = []
  let cursor: string | undefined
  do {
    const page = await searchKeys(storage, Date.now(), { search, state, plan, sort, cursor, limit: LIST_PAGE })
    all.push(...page.keys)
    cursor = page.next
  } while (cursor !== undefined)
  return all
}

/** Text to search for: not empty, at most 200 characters (as the admin API's `q`). */
function searchText (value: string): string {
  const text = value.trim()
  if (text === '' || [...text].length > 200) throw new InvalidArgumentError('must be 1 to 200 characters')
  return text
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
    .description('list API keys, oldest first (never their secrets); the options keep only the keys that match')
    .option('--search <text>', 'keys whose name or token hint contains this text (case ignored), or whose id it is', searchText)
    .addOption(new Option('--state <state>', 'keys in this state').choices(KEY_STATES))
    .addOption(new Option('--plan <plan>', 'keys on this plan').choices(PLANS))
    .addOption(new Option('--sort <order>', 'id: oldest first; lastUsed: the most recently used first, never-used keys last').choices(KEY_SORTS).default('id'))
    .option('--json', 'print a JSON array of objects (id, name, plan, limits, scopes, tokenHint, createdAt, expiresAt, lastUsedAt, revoked, …)')
    .action(async (options: ListOptions) => {
      const filtered = options.search !== undefined || options.state !== undefined || options.plan !== undefined
      const { all, url } = await withStorage(async (storage, config) => ({ all: await everyMatch(storage, options), url: config.databaseUrl }))
      if (options.json === true) {
        write(JSON.stringify(all) + '\n')
      } else if (all.length === 0) {
        write(filtered ? 'No API key matches.\n' : `No API keys in ${databaseLabel(url)}; create one with \`petstore keys create --plan PLAN\`.\n`)
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
      if (key === undefined) throw noSuchKey(id)
      writeKey(key, options.json)
    })

  keys.command('usage')
    .description('show a key\'s admitted and refused requests per UTC day, oldest first (each instance writes its counts at least every 10 seconds)')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .option('--from <date>', 'the first day, YYYY-MM-DD (UTC); default: 29 days before --to')
    .option('--to <date>', 'the last day, YYYY-MM-DD (UTC), included; default: today; at most 366 days after --from')
    .option('--json', 'print a JSON array of {date, admitted, refused}, as the admin API answers')
    .action(async (id: number, options: { from?: string, to?: string, json?: boolean }) => {
      const days = await withStorage(async (storage) => await keyUsage(storage, id, { from: options.from, to: options.to }, Date.now()))
      if (days === undefined) throw noSuchKey(id)
      if (options.json === true) {
        write(JSON.stringify(days) + '\n')
        return
      }
      write(formatTable(USAGE_COLUMNS, days.map((day) => [day.date, String(day.admitted), String(day.refused)])))
    })

  keys.command('update')
    .description('change a key\'s name, plan, limits, scopes or expiry; every instance applies it within one second')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .option('--name <label>', 'a label for the key')
    .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS))
    .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan); `plan`: the plan\'s again', limitOrPlan)
    .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan); `plan`: the plan\'s again', limitOrPlan)
    .option('--scopes <scopes>', `what the key may do, comma-separated: ${SCOPES.join(', ')}`, scopeList)
    .option('--expires-at <date>', 'when the key stops working: an RFC 3339 time, a date (its start, UTC), or `never`', instantOrNever)
    .option('--json', 'print the key as one JSON object, as `keys show --json` does')
    .action(async (id: number, options: UpdateOptions, command: Command) => {
      const update = asKeyUpdate(options)
      const json = options.json
      if (Object.keys(update).length === 0) {
        command.error('nothing to change: give --name, --plan, --per-minute, --per-day, --scopes or --expires-at', { exitCode: EXIT_USAGE, code: 'petstore.nothingToChange' })
      }
      const key = await withStorage(async (storage) => await updateKey(storage, id, update, Date.now()))
      if (key === undefined) throw noSuchKey(id)
      if (json !== true) write(`Updated key ${id}.\n`)
      writeKey(key, json)
    })

  keys.command('roll')
    .description('give a key a new token, printed alone on the last line (shown only this once); the current token works for the overlap given, then stops')
    .argument('<id>', 'the key id, as `petstore keys list` shows it', positiveInteger)
    .addOption(new Option('--expire-current-in <duration>', 'how long the current token keeps working: 0 (it stops at once), or minutes, hours or days up to 7 days (30m, 12h, 7d)')
      .argParser(overlap).makeOptionMandatory())
    .option('--json', 'print one JSON object: the key, as `keys show --json` has it, and its new `token`')
    .action(async (id: number, options: { expireCurrentIn: number, json?: boolean }) => {
      const key = await withStorage(async (storage) => await rollKey(storage, id, options.expireCurrentIn, Date.now()))
      if (key === undefined) throw noSuchKey(id)
      if (options.json === true) {
        write(JSON.stringify(key) + '\n')
        return
      }
      write(
        `Rolled key ${key.id}${key.name === '' ? '' : ` (${printable(key.name)})`}: ` +
        `${key.previousTokenExpiresAt === null ? 'the token before this one no longer works' : `the token before this one works until ${key.previousTokenExpiresAt}`}.\n` +
        'The token below is shown only this once; store it now.\n' +
        `${key.token}\n`)
    })

  keys.command('find')
    .description('show the key a token belongs to, by its current token or one it had before a roll, revoked or not; the token is read on standard input')
    .option('--json', 'print the key as one JSON object, as `keys show --json` does')
    // Arguments are taken only to refuse them with a reason: a token there is in the shell's history already.
    .allowExcessArguments()
    .action(async (options: { json?: boolean }, command: Command) => {
      if (command.args.length > 0) {
        command.error('keys find takes the token on standard input, never as an argument, which shells keep in their history: `petstore keys find < FILE`',
          { exitCode: EXIT_USAGE, code: 'petstore.tokenArgument' })
      }
      const token = await readToken()
      if (!inspectToken(token).ok) {
        throw new CommandFailure('standard input does not hold a petstore token (pet_live_… or pet_test_…, with its checksum), alone on one line')
      }
      const key = await withStorage(async (storage) => await findKey(storage, token, Date.now()))
      if (key === undefined) throw new CommandFailure('no key was ever given this token')
      writeKey(key, options.json)
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
