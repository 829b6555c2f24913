// What `petstore keys` writes: keys for people (a table, or a field a
// line) or for scripts (JSON), and the refusals of keys/manage.ts in the
// admin API's words, naming the option rather than the field.
import { KeyRuleError, type DayUsage, type FoundKey, type KeyView, type KeyWithToken } from '../../keys/manage.js'
import type { DeprecatedOperationView } from '../../keys/deprecated-callers.js'
import { CommandFailure } from '../errors.js'
import type { CommandIo } from '../io.js'
import { formatTable, printable, type Column } from '../table.js'

/** Names are the one free-text column: past this many columns they are cut in the table (`--json` has them whole). */
const NAME_COLUMNS = 40

/** Standard output, or the caller's stand-in for it. */
type Out = CommandIo['out']

export function writeJson (out: Out, value: unknown): void {
  out(JSON.stringify(value) + '\n')
}

const KEY_COLUMNS: readonly Column[] = [
  { title: 'ID', align: 'right' },
  { title: 'NAME', maxWidth: NAME_COLUMNS },
  { title: 'PLAN' },
  { title: 'PER MINUTE', align: 'right' },
  { title: 'PER DAY', align: 'right' },
  { title: 'CONCURRENCY', align: 'right' },
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
    String(key.id), key.name, key.plan, String(key.perMinute), String(key.perDay), String(key.concurrency), key.scopes.join(','), key.environment,
    key.tokenHint, key.createdAt, key.expiresAt ?? 'never', key.revokedAt ?? 'no'
  ]
}

/** One key for people, a field a line, as `keys show` prints it; for scripts, one JSON object. */
export function writeKey (out: Out, key: KeyView, json: boolean | undefined): void {
  if (json === true) {
    writeJson(out, key)
    return
  }
  const row = keyRow(key)
  const fields: Array<[string, string]> = KEY_COLUMNS.map((column, i) => [column.title.toLowerCase(), row[i] ?? ''])
  fields.push(['last used', key.lastUsedAt ?? 'never'])
  if (key.previousTokenExpiresAt !== null) fields.push(['previous token until', key.previousTokenExpiresAt])
  if (key.leak !== null) fields.push(['leaked', [key.leak.reportedAt, key.leak.report, key.leak.source, key.leak.url].filter((part) => part !== null).join(' ')])
  out(fields.map(([name, value]) => `${name}: ${printable(value)}\n`).join(''))
}

/** A key found by a token, and which of its tokens that is, as the admin lookup answers. */
export function writeFoundKey (out: Out, { key, matchedToken }: FoundKey, json: boolean | undefined): void {
  if (json === true) {
    writeJson(out, { ...key, matchedToken })
    return
  }
  writeKey(out, key, false)
  out(`matched token: ${matchedToken}\n`)
}

/** Keys for people, as an aligned table; `empty`, a line, when there are none. */
export function writeKeyTable (out: Out, keys: readonly KeyView[], empty: string): void {
  out(keys.length === 0 ? `${empty}\n` : formatTable(KEY_COLUMNS, keys.map(keyRow)))
}

export function writeUsageTable (out: Out, days: readonly DayUsage[]): void {
  out(formatTable(USAGE_COLUMNS, days.map((day) => [day.date, String(day.admitted), String(day.refused)])))
}

const CALLER_COLUMNS: readonly Column[] = [
  { title: 'ID', align: 'right' },
  { title: 'NAME', maxWidth: NAME_COLUMNS },
  { title: 'PLAN' },
  { title: 'TOKEN' },
  { title: 'REVOKED' },
  { title: 'OPERATION' },
  { title: 'SUNSET' },
  { title: 'CALLS', align: 'right' },
  { title: 'LAST CALL' }
]

/** The callers of each deprecated operation for people, a row per key and operation; `empty`, a line, when there are none. */
export function writeCallerTable (out: Out, operations: readonly DeprecatedOperationView[], empty: string): void {
  const rows = operations.flatMap(({ operationId, sunset, callers }) => callers.map(({ key, calls, lastCall }) => [
    String(key.id), key.name, key.plan, key.tokenHint, key.revokedAt ?? 'no', operationId, sunset, String(calls), lastCall
  ]))
  out(rows.length === 0 ? `${empty}\n` : formatTable(CALLER_COLUMNS, rows))
}

/** For scripts: each key that called a deprecated operation, once, with its calls of each, in the order first listed. */
export function callingKeys (operations: readonly DeprecatedOperationView[]): Array<KeyView & { deprecatedCalls: Array<{ operationId: string, sunset: string, calls: number, lastCall: string }> }> {
  const keys = new Map<number, KeyView & { deprecatedCalls: Array<{ operationId: string, sunset: string, calls: number, lastCall: string }> }>()
  for (const { operationId, sunset, callers } of operations) {
    for (const { key, calls, lastCall } of callers) {
      const entry = keys.get(key.id) ?? { ...key, deprecatedCalls: [] }
      entry.deprecatedCalls.push({ operationId, sunset, calls, lastCall })
      keys.set(key.id, entry)
    }
  }
  return [...keys.values()]
}

/** A line for people, then the new token alone on the last line, which `| tail -n 1` takes. */
export function writeWithToken (out: Out, key: KeyWithToken, line: string): void {
  out(`${line}\nThe token below is shown only this once; store it now.\n${key.token}\n`)
}

export function writeLine (out: Out, line: string): void {
  out(`${line}\n`)
}

/** ` (name)`, printable, or nothing for a key without one. */
export function nameOf (key: KeyView): string {
  return key.name === '' ? '' : ` (${printable(key.name)})`
}

/** The option of each field a rule of keys names, as the admin API has it. */
const OPTION_OF_FIELD: Readonly<Record<string, string>> = {
  name: '--name',
  plan: '--plan',
  perMinute: '--per-minute',
  perDay: '--per-day',
  concurrency: '--concurrency',
  scopes: '--scopes',
  expiresAt: '--expires-at',
  expireCurrentInSeconds: '--expire-current-in',
  from: '--from',
  to: '--to'
}

/** A rule of keys broken, as one line naming the options. */
export function ruleBroken (error: KeyRuleError): string {
  const reason = error.reason.replace(/\b(?:perMinute|perDay|expiresAt|expireCurrentInSeconds)\b/g, (field) => OPTION_OF_FIELD[field] ?? field)
  return `${OPTION_OF_FIELD[error.field] ?? error.field} ${reason}`
}

/** A rule of keys broken as a failure of one line (status 1), else `error` itself: keys/manage.ts's other refusals are worded for both doors already. */
export function asKeyFailure (error: unknown): unknown {
  return error instanceof KeyRuleError ? new CommandFailure(ruleBroken(error), { cause: error }) : error
}
