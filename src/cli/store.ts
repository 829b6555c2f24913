// `petstore backup FILE`: a copy of the store named by DATABASE_URL, taken
// while the service runs (docs/OPERATING.md: Backups). `petstore copy-store --to URL`:
// everything in that store, into another (docs/SCALING.md).
import { type Command, InvalidArgumentError } from 'commander'
import { loadConfig, redactUrl } from '../config.js'
import { BackupRefused, backupSqlite } from '../db/backup.js'
import { SqliteError } from '../db/sqlite/driver.js'
import { sqlitePath } from '../db/sqlite/storage.js'
import { databaseLabel } from './database.js'
import { CommandFailure, oneLine } from './errors.js'
import type { CommandIo } from './io.js'

function backup (io: CommandIo, file: string): void {
  const { databaseUrl } = loadConfig()
  if (!databaseUrl.startsWith('sqlite:')) {
    throw new CommandFailure(`${databaseLabel(databaseUrl)} is PostgreSQL: back it up with pg_dump (docs/OPERATING.md: Backups)`)
  }
  try {
    const { keys, pets } = backupSqlite(sqlitePath(databaseUrl), file)
    io.out(`backed up ${keys} keys and ${pets} pets to ${file}\n`)
  } catch (error) {
    if (error instanceof BackupRefused || error instanceof SqliteError || (error instanceof Error && 'code' in error)) {
      const reason = error instanceof Error ? oneLine(error.message) : String(error)
      throw new CommandFailure(`cannot back up ${databaseLabel(databaseUrl)} to ${file}: ${reason}`, { cause: error })
    }
    throw error
  }
}

/** The target's URL, in the forms DATABASE_URL takes. */
function storeUrl (value: string): string {
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(value)) {
    throw new InvalidArgumentError('must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE')
  }
  return value
}

/** The names the output gives each table. */
const TABLE_LABELS: Readonly<Record<string, string>> = {
  api_keys: 'keys',
  api_key_tokens: 'tokens issued',
  pets: 'pets',
  idempotency_keys: 'idempotency records',
  key_usage: 'usage rows',
  secrets: 'secrets'
}

async function copyTo (io: CommandIo, targetUrl: string): Promise<void> {
  const { databaseUrl } = loadConfig()
  // Loaded only for this command: it may bring node-postgres along.
  const { copyStore } = await import('../db/copy.js')
  const started = performance.now()
  let counts: Map<string, bigint>
  try {
    counts = await copyStore(databaseUrl, targetUrl)
  } catch (error) {
    // Either side may have failed; the reason names which when it can (a path, a host, a table).
    const reason = error instanceof Error ? oneLine(error.message) : String(error)
    throw new CommandFailure(`cannot copy ${databaseLabel(databaseUrl)} to ${redactUrl(targetUrl)}: ${reason}`, { cause: error })
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  const lines = [...counts].map(([table, count]) => `  ${TABLE_LABELS[table] ?? table}: ${count}`)
  io.out(`copied ${databaseLabel(databaseUrl)} to ${redactUrl(targetUrl)} in ${seconds} s, checked:\n${lines.join('\n')}\n`)
}

export function addStoreCommands (program: Command, io: CommandIo): void {
  program.command('backup')
    .description('write a consistent copy of the SQLite store to FILE while the service runs; FILE is replaced whole or not at all')
    .argument('<FILE>', 'where the copy goes; its folder must exist')
    .action((file: string) => { backup(io, file) })

  program.command('copy-store')
    .description('copy everything in the store into an empty one (the move from SQLite to PostgreSQL): keys, tokens, pets, usage, idempotency records')
    .requiredOption('--to <URL>', 'the empty store to copy into: sqlite:PATH or postgres://…', storeUrl)
    .addHelpText('after', '\nRate-limit counters and bans are not copied. docs/SCALING.md, "The move from SQLite to PostgreSQL", walks through it.')
    .action(async (options: { to: string }) => { await copyTo(io, options.to) })
}
