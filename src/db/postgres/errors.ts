// What a PostgreSQL error means for a client: try again later (503), or a fault on our side (500).
import { StorageUnavailableError } from '../../errors.js'

/**
 * SQLSTATE codes, beyond classes 08 and 53, that mean the database cannot be
 * reached or written now: shutdowns and startups, a statement cancelled by its
 * timeout, a read-only server (https://www.postgresql.org/docs/current/errcodes-appendix.html).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '25006'])
/** Socket errors on the way to the server. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
/** node-postgres's own words for a server it lost or that did not answer in time. */
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Connection timeout|Client has encountered a connection error|Client was closed|Cannot use a pool after calling end/i

/**
 * StorageUnavailableError when the client may retry later; anything else is
 * returned as it is, to be answered 500. Either way the cause goes to the
 * log, never to the client.
 */
export function classifyPostgresError (error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error))
  if (error instanceof StorageUnavailableError) return error
  const code = (error as { code?: unknown }).code
  const unavailable = typeof code === 'string'
    ? /^(08|53)/.test(code) || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code)
    : UNAVAILABLE_MESSAGES.test(error.message)
  return unavailable
    ? new StorageUnavailableError(`PostgreSQL: ${typeof code === 'string' ? `${code}: ` : ''}${error.message}`, { cause: error })
    : error
}
