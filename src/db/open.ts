// Chooses the storage backend from DATABASE_URL.
import { ConfigError } from '../config.js'
import { openSqlite } from './sqlite.js'
import type { Storage } from './storage.js'

export async function openStorage (databaseUrl: string): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl)
  throw new ConfigError('DATABASE_URL: PostgreSQL is not supported by this build yet; use sqlite:PATH')
}
