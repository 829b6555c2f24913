// Chooses the storage backend from DATABASE_URL. The PostgreSQL client is
// loaded only for a PostgreSQL database: an embedded instance does not carry
// its memory.
import { openSqlite } from './sqlite.js'
import type { Storage } from './storage.js'

export async function openStorage (databaseUrl: string, { poolSize }: { poolSize: number }): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl)
  const { openPostgres } = await import('./postgres.js')
  return await openPostgres(databaseUrl, { poolSize })
}
