// What a SQLite error means for a client: try again later (503), or a fault on our side (500).
import { SqliteError } from './driver.js'
import { StorageUnavailableError } from '../../errors.js'

export function isBusy (error: unknown): boolean {
  return error instanceof SqliteError && (error.code === 'SQLITE_BUSY' || error.code.startsWith('SQLITE_BUSY_'))
}

/**
 * Primary result codes for a database that cannot be reached or written
 * now: busy or locked by another connection, an I/O error, a full disk, a
 * read-only or unopenable file. Their extended codes (SQLITE_IOERR_WRITE…)
 * count too. https://www.sqlite.org/rescode.html
 */
const UNAVAILABLE_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_CANTOPEN'])

export function isUnavailable (error: unknown): boolean {
  return error instanceof SqliteError && UNAVAILABLE_CODES.has(error.code.split('_', 2).join('_'))
}

/**
 * StorageUnavailableError when the client may retry later; anything else is
 * returned as it is, to be answered 500. Either way the cause goes to the
 * log, never to the client.
 */
export function classifySqliteError (error: unknown): Error {
  if (error instanceof SqliteError && isUnavailable(error)) {
    return new StorageUnavailableError(`SQLite: ${error.code}: ${error.message}`, { cause: error })
  }
  return error instanceof Error ? error : new Error(String(error))
}
