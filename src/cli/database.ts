// The database the `keys` commands work on, and one-line descriptions of why it
// could not be opened. A key is useful only in the server's database, so
// `sqlite::memory:` and a path whose folder does not exist are refused; a
// missing file is created (docs/INTERNALS.md, section "Keys command's database").
import { statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { loadConfig, redactUrl, type Config } from '../config.js'
import { openStorage } from '../db/open.js'
import { SqliteError } from '../db/sqlite/driver.js'
import { sqlitePath } from '../db/sqlite/storage.js'
import type { Storage } from '../db/storage.js'
import { StorageUnavailableError } from '../errors.js'
import { CommandFailure, oneLine } from './errors.js'

/** The database as `DATABASE_URL=…` with no password, for messages. */
export function databaseLabel (url: string): string {
  return `DATABASE_URL=${redactUrl(url)}`
}

/** Throws a CommandFailure when `url` is a SQLite database that the server cannot be reading. */
function refuseSqliteTheServerCannotRead (url: string): void {
  if (!url.startsWith('sqlite:')) return
  const path = sqlitePath(url)
  if (path === ':memory:') {
    throw new CommandFailure(`${databaseLabel(url)} lasts only as long as this command, so a key made there would be lost; set DATABASE_URL to the server's database`)
  }
  const folder = dirname(resolve(path))
  let problem: string | undefined
  try {
    if (!statSync(folder).isDirectory()) problem = `${folder} is not a folder`
  } catch {
    problem = `the folder ${folder} does not exist`
  }
  if (problem !== undefined) {
    throw new CommandFailure(`${databaseLabel(url)}: ${problem}, so this cannot be the server's database; check DATABASE_URL (the server creates the folder when it first starts)`)
  }
}

function isInvalidUrl (error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ERR_INVALID_URL'
}

/** The root cause's message, on one line. */
function reason (error: unknown): string {
  let cause = error
  while (cause instanceof StorageUnavailableError && cause.cause !== undefined) cause = cause.cause
  if (isInvalidUrl(cause)) return 'not a valid URL'
  const text = cause instanceof Error ? cause.message : String(cause)
  return oneLine(text) || (cause instanceof Error ? cause.name : 'unknown error')
}

/**
 * `error` as a CommandFailure naming the database when it came from opening
 * or using it, else `error` itself. Configuration has been validated by
 * then, so an invalid URL can only be DATABASE_URL's (node-postgres parses it
 * with `new URL`).
 */
export async function asDatabaseFailure (url: string, error: unknown, doing: 'open' | 'use'): Promise<unknown> {
  const fromDatabase = error instanceof StorageUnavailableError || error instanceof SqliteError ||
    isInvalidUrl(error) || await isPostgresError(url, error)
  return fromDatabase ? cannot(doing, url, error) : error
}

/** node-postgres is loaded only for a PostgreSQL database, as the server loads it (db/open.ts). */
async function isPostgresError (url: string, error: unknown): Promise<boolean> {
  if (url.startsWith('sqlite:')) return false
  const { default: pg } = await import('pg')
  return error instanceof pg.DatabaseError
}

function cannot (doing: 'open' | 'use', url: string, error: unknown): CommandFailure {
  return new CommandFailure(`cannot ${doing} the database ${databaseLabel(url)}: ${reason(error)}`, { cause: error })
}

/** Opens the database of `config` for a `keys` command, or fails with one line that names it. */
async function openKeysDatabase (config: Config): Promise<Storage> {
  refuseSqliteTheServerCannotRead(config.databaseUrl)
  try {
    return await openStorage(config.databaseUrl, { poolSize: config.databasePoolSize })
  } catch (error) {
    throw cannot('open', config.databaseUrl, error)
  }
}

/**
 * Runs a command's `work` on the store DATABASE_URL names, and closes it
 * after. A failure is told as the database's (`asDatabaseFailure`), then as
 * the command's own refusals by `asCommandFailure`.
 */
export async function withCommandStorage<T> (work: (storage: Storage, config: Config) => Promise<T>, asCommandFailure: (failure: unknown) => unknown): Promise<T> {
  const config = loadConfig()
  const storage = await openKeysDatabase(config)
  try {
    return await work(storage, config)
  } catch (error) {
    throw asCommandFailure(await asDatabaseFailure(config.databaseUrl, error, 'use'))
  } finally {
    await storage.close()
  }
}
