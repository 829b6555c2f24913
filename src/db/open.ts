// Chooses the storage backend from DATABASE_URL. The PostgreSQL client is
// loaded only for a PostgreSQL database: an embedded instance does not carry
// its memory.
import { openSqlite } from './sqlite/storage.js'
import type { Storage } from './storage.js'
import type { WriteTurn } from './sqlite/write-turns.js'

/** `writeTurn`: on SQLite, shared by the workers of one process (sqlite/write-turns.ts). */
export async function openStorage (databaseUrl: string, { poolSize, writeTurn }: { poolSize: number, writeTurn?: WriteTurn | undefined }): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl, writeTurn === undefined ? {} : { writeTurn })
  const { openPostgres } = await import('./postgres/storage.js')
  return await openPostgres(databaseUrl, { poolSize })
}
