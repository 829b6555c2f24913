// Chooses the storage backend from DATABASE_URL. The PostgreSQL client is
// loaded only for a PostgreSQL database: an embedded instance does not carry
// its memory.
import { openSqlite } from './sqlite.js'
import type { Inserts } from './sqlite.js'
import type { Storage } from './storage.js'

/** `inserts`: on SQLite, where a worker's new animals are committed (workers/pet-inserts.ts). */
export async function openStorage (databaseUrl: string, { poolSize, inserts }: { poolSize: number, inserts?: Inserts | undefined }): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl, inserts === undefined ? {} : { inserts })
  const { openPostgres } = await import('./postgres.js')
  return await openPostgres(databaseUrl, { poolSize })
}
