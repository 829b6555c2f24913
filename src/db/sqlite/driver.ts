// The SQLite driver for the running Node.js: better-sqlite3 13 on Node 22 and
// later, 12 (the npm alias `better-sqlite3-node20`) on Node 20, since each
// crashes on the other's Node (docs/INTERNALS.md, section "SQLite driver").
// Both have the same API, so everything else imports the driver from here.
import { closeSync, openSync } from 'node:fs'
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

const NODE_MAJOR = Number(process.versions.node.split('.')[0])
const PACKAGE = NODE_MAJOR >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20'

function load (): typeof BetterSqlite3 {
  const require = createRequire(import.meta.url)
  try {
    return require(PACKAGE) as typeof BetterSqlite3
  } catch (error) {
    throw new Error(`cannot load the SQLite driver ${PACKAGE} for Node ${process.versions.node}: ` +
      'run `npm install` again with this Node.js, or use Node.js 22 or later', { cause: error })
  }
}

export const Database = load()
// The driver's instance type, under the same name as its constructor.
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type Database = BetterSqlite3.Database
export const SqliteError = Database.SqliteError
// An error the driver throws (its typings name only the class's type).
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type SqliteError = InstanceType<typeof SqliteError>

/**
 * Creates the database file, readable by its owner alone, unless it exists.
 * An existing file is never opened here: closing any descriptor of a file
 * drops every POSIX lock this process holds on it, a worker's connection's
 * included, and a reader in another process would then take the WAL for
 * unused and delete it under the service (docs/WORKERS.md, "One file, many
 * connections"; https://sqlite.org/howtocorrupt.html#_posix_advisory_locks_canceled_by_a_separate_thread_doing_close_).
 */
export function createOwnerOnly (path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}
