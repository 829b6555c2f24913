// `petstore keys create|list|show|usage|update|roll|find|revoke`: API keys
// for operators, in the database the server reads (DATABASE_URL,
// PETSTORE_ENV). Each command reads its options (parse.ts), calls
// keys/manage.ts, as the admin API does, and writes the answer (render.ts):
// both doors refuse the same things in the same words.
import { type Command, Option } from 'commander'
import type { Config } from '../../config.js'
import type { Storage } from '../../db/storage.js'
import { KEY_SORTS, KEY_STATES, MAX_CONCURRENCY, PLANS, SCOPES } from '../../domain.js'
import {
  KeyRuleError, checkConcurrency, checkExpiry, checkNewKey, checkOverlap, findKey, issueKey, keyUsage, revokeKey, rollKey,
  showKey, updateKey, type KeyView
} from '../../keys/manage.js'
import { searchKeys } from '../../keys/overview.js'
import { CALLER_DAYS, deprecatedCallers } from '../../keys/deprecated-callers.js'
import { inspectToken } from '../../keys/tokens.js'
import { databaseLabel, withCommandStorage } from '../database.js'
import { CommandFailure, EXIT_USAGE } from '../errors.js'
import type { CommandIo } from '../io.js'
import {
  asKeyUpdate, duration, instant, instantOrNever, limitOrPlan, overlap, positiveInteger, scopeList, searchText,
  type CreateOptions, type ListOptions, type UpdateOptions
} from './parse.js'
import {
  asKeyFailure, callingKeys, nameOf, ruleBroken, writeCallerTable, writeFoundKey, writeJson, writeKey, writeKeyTable, writeLine, writeUsageTable, writeWithToken
} from './render.js'
import { readToken } from './token-input.js'

async function withStorage<T> (work: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  return await withCommandStorage(work, asKeyFailure)
}

/**
 * Runs a check of keys/manage.ts on what the command line alone gives,
 * before any database is opened: a rule it breaks is bad usage (status 2),
 * as a value that does not parse is.
 */
function checkUsage (command: Command, check: () => void): void {
  try {
    check()
  } catch (error) {
    if (error instanceof KeyRuleError) command.error(ruleBroken(error), { exitCode: EXIT_USAGE, code: 'petstore.keyRule' })
    throw error
  }
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

const ID_HELP = 'the key id, as `petstore keys list` shows it'

export function addKeysCommands (program: Command, io: CommandIo): void {
  const keys = program.command('keys').description('manage API keys (in the database of DATABASE_URL, for PETSTORE_ENV)')

  keys.command('create')
    .description('create an API key and print its secret token, alone on the last line (shown only this once)')
    .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS).makeOptionMandatory())
    .option('--name <label>', 'a label for the key')
    .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan)', positiveInteger)
    .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan)', positiveInteger)
    .option('--concurrency <n>', `requests in flight at once, 1 to ${MAX_CONCURRENCY} (overrides the plan's)`, positiveInteger)
    .option('--scopes <scopes>', `what the key may do, comma-separated: ${SCOPES.join(', ')} (default: both)`, scopeList)
    .addOption(new Option('--expires-at <date>', 'when the key stops working: an RFC 3339 time, or a date (its start, UTC)').argParser(instant).conflicts('expiresIn'))
    .option('--expires-in <duration>', 'how long the key works: minutes, hours or days (30m, 12h, 90d)', duration)
    .option('--json', 'print one JSON object (id, name, plan, limits, scopes, expiresAt, tokenHint, token, …)')
    .action(async (options: CreateOptions, command: Command) => {
      const now = Date.now()
      const wanted = {
        plan: options.plan,
        perMinute: options.perMinute,
        perDay: options.perDay,
        concurrency: options.concurrency,
        scopes: options.scopes,
        expiresAt: options.expiresAt ?? (options.expiresIn === undefined ? null : now + options.expiresIn),
        now
      }
      // The command line is the whole key: any rule it breaks is the command line's.
      checkUsage(command, () => checkNewKey(wanted))
      const key = await withStorage(async (storage, config) => await issueKey(storage, { ...wanted, name: options.name ?? '', environment: config.environment }))
      if (options.json === true) {
        writeJson(io.out, key)
        return
      }
      writeWithToken(io.out, key,
        `Created ${key.environment} key ${key.id}${nameOf(key)}: plan ${key.plan}, ` +
        `${key.perMinute} requests a minute, ${key.perDay} a day, ${key.concurrency} in flight at once; scopes ${key.scopes.join(', ')}; ` +
        `${key.expiresAt === null ? 'never expires' : `expires ${key.expiresAt}`}.`)
    })

  keys.command('list')
    .description('list API keys, oldest first (never their secrets); the options keep only the keys that match')
    .option('--search <text>', 'keys whose name or token hint contains this text (case ignored), or whose id it is', searchText)
    .addOption(new Option('--state <state>', 'keys in this state').choices(KEY_STATES))
    .addOption(new Option('--plan <plan>', 'keys on this plan').choices(PLANS))
    .addOption(new Option('--sort <order>', 'id: oldest first; lastUsed: the most recently used first, never-used keys last').choices(KEY_SORTS).default('id'))
    .addOption(new Option('--calls-deprecated', `only the keys that called a deprecated operation in the last ${CALLER_DAYS} days (UTC, today included), with their calls and last call, most calls first`)
      .conflicts(['search', 'state', 'plan']))
    .option('--json', 'print a JSON array of objects (id, name, plan, limits, scopes, tokenHint, createdAt, expiresAt, lastUsedAt, revoked, …; with --calls-deprecated, deprecatedCalls too)')
    .action(async (options: ListOptions) => {
      if (options.callsDeprecated === true) {
        const operations = await withStorage(async (storage) => await deprecatedCallers(storage, Date.now()))
        if (options.json === true) writeJson(io.out, callingKeys(operations))
        else writeCallerTable(io.out, operations, `No key called a deprecated operation in the last ${CALLER_DAYS} days.`)
        return
      }
      const filtered = options.search !== undefined || options.state !== undefined || options.plan !== undefined
      const { all, url } = await withStorage(async (storage, config) => ({ all: await everyMatch(storage, options), url: config.databaseUrl }))
      if (options.json === true) {
        writeJson(io.out, all)
        return
      }
      writeKeyTable(io.out, all, filtered ? 'No API key matches.' : `No API keys in ${databaseLabel(url)}; create one with \`petstore keys create --plan PLAN\`.`)
    })

  keys.command('show')
    .description('show one API key (never its secret)')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--json', 'print one JSON object, as one element of `keys list --json`')
    .action(async (id: number, options: { json?: boolean }) => {
      writeKey(io.out, await withStorage(async (storage) => await showKey(storage, id, Date.now())), options.json)
    })

  keys.command('usage')
    .description('show a key\'s admitted and refused requests per UTC day, oldest first (each instance writes its counts at least every 10 seconds)')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--from <date>', 'the first day, YYYY-MM-DD (UTC); default: 29 days before --to')
    .option('--to <date>', 'the last day, YYYY-MM-DD (UTC), included; default: today; at most 366 days after --from')
    .option('--json', 'print a JSON array of {date, admitted, refused}, as the admin API answers')
    .action(async (id: number, options: { from?: string, to?: string, json?: boolean }) => {
      const days = await withStorage(async (storage) => await keyUsage(storage, id, { from: options.from, to: options.to }, Date.now()))
      if (options.json === true) writeJson(io.out, days)
      else writeUsageTable(io.out, days)
    })

  keys.command('update')
    .description('change a key\'s name, plan, limits, cap of requests in flight, scopes or expiry; every instance applies it within one second')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--name <label>', 'a label for the key')
    .addOption(new Option('--plan <plan>', 'the plan whose limits apply').choices(PLANS))
    .option('--per-minute <n>', 'requests per minute (required for enterprise; overrides the plan); `plan`: the plan\'s again', limitOrPlan)
    .option('--per-day <n>', 'requests per day (required for enterprise; overrides the plan); `plan`: the plan\'s again', limitOrPlan)
    .option('--concurrency <n>', `requests in flight at once, 1 to ${MAX_CONCURRENCY} (overrides the plan's); \`plan\`: the plan's again, which follows the plan`, limitOrPlan)
    .option('--scopes <scopes>', `what the key may do, comma-separated: ${SCOPES.join(', ')}`, scopeList)
    .option('--expires-at <date>', 'when the key stops working: an RFC 3339 time, a date (its start, UTC), or `never`', instantOrNever)
    .option('--json', 'print the key as one JSON object, as `keys show --json` does')
    .action(async (id: number, options: UpdateOptions, command: Command) => {
      const update = asKeyUpdate(options)
      if (Object.keys(update).length === 0) {
        command.error('nothing to change: give --name, --plan, --per-minute, --per-day, --concurrency, --scopes or --expires-at', { exitCode: EXIT_USAGE, code: 'petstore.nothingToChange' })
      }
      const now = Date.now()
      // An expiry and a cap are the command line's own; the other rules need the key as stored, and a change that breaks them is a failure (status 1).
      const { expiresAt, concurrency } = update
      if (expiresAt !== undefined && expiresAt !== null) checkUsage(command, () => checkExpiry(expiresAt, now))
      if (concurrency !== undefined && concurrency !== null) checkUsage(command, () => checkConcurrency(concurrency))
      const key = await withStorage(async (storage) => await updateKey(storage, id, update, now))
      if (options.json !== true) writeLine(io.out, `Updated key ${id}.`)
      writeKey(io.out, key, options.json)
    })

  keys.command('roll')
    .description('give a key a new token, printed alone on the last line (shown only this once); the current token works for the overlap given, then stops')
    .argument('<id>', ID_HELP, positiveInteger)
    .addOption(new Option('--expire-current-in <duration>', 'how long the current token keeps working: 0 (it stops at once), or minutes, hours or days up to 7 days (30m, 12h, 7d)')
      .argParser(overlap).makeOptionMandatory())
    .option('--json', 'print one JSON object: the key, as `keys show --json` has it, and its new `token`')
    .action(async (id: number, options: { expireCurrentIn: number, json?: boolean }, command: Command) => {
      checkUsage(command, () => checkOverlap(options.expireCurrentIn))
      const key = await withStorage(async (storage) => await rollKey(storage, id, options.expireCurrentIn, Date.now()))
      if (options.json === true) {
        writeJson(io.out, key)
        return
      }
      writeWithToken(io.out, key,
        `Rolled key ${key.id}${nameOf(key)}: ` +
        `${key.previousTokenExpiresAt === null ? 'the token before this one no longer works' : `the token before this one works until ${key.previousTokenExpiresAt}`}.`)
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
      const token = await readToken(io)
      if (!inspectToken(token).ok) {
        throw new CommandFailure('standard input does not hold a petstore token (pet_live_… or pet_test_…, with its checksum), alone on one line')
      }
      const found = await withStorage(async (storage) => await findKey(storage, token, Date.now()))
      writeFoundKey(io.out, found, options.json)
    })

  keys.command('revoke')
    .description('revoke an API key: every instance refuses it within one second')
    .argument('<id>', ID_HELP, positiveInteger)
    .action(async (id: number) => {
      await withStorage(async (storage) => await revokeKey(storage, id, Date.now()))
      writeLine(io.out, `Revoked key ${id}.`)
    })
}
