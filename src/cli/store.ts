// `petstore backup FILE`: a copy of the store named by DATABASE_URL, taken
// while the service runs (README: Backups).
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { BackupRefused, backupSqlite } from '../db/backup.js'
import { SqliteError } from '../db/sqlite-driver.js'
import { sqlitePath } from '../db/sqlite.js'
import { databaseLabel } from './database.js'
import { CommandFailure, oneLine } from './errors.js'

function backup (file: string): void {
  const { databaseUrl } = loadConfig()
  if (!databaseUrl.startsWith('sqlite:')) {
    throw new CommandFailure(`${databaseLabel(databaseUrl)} is PostgreSQL: back it up with pg_dump (README: Backups)`)
  }
  try {
    const { keys, pets } = backupSqlite(sqlitePath(databaseUrl), file)
    process.stdout.write(`backed up ${keys} keys and ${pets} pets to ${file}\n`)
  } catch (error) {
    if (error instanceof BackupRefused || error instanceof SqliteError || (error instanceof Error && 'code' in error)) {
      const reason = error instanceof Error ? oneLine(error.message) : String(error)
      throw new CommandFailure(`cannot back up ${databaseLabel(databaseUrl)} to ${file}: ${reason}`, { cause: error })
    }
    throw error
  }
}

export function addStoreCommands (program: Command): void {
  program.command('backup')
    .description('write a consistent copy of the SQLite store to FILE while the service runs; FILE is replaced whole or not at all')
    .argument('<FILE>', 'where the copy goes; its folder must exist')
    .action((file: string) => { backup(file) })
}
