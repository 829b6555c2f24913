// Chooses the storage backend from DATABASE_URL.
import { openPostgres } from './postgres.js'
import { openSqlite } from './sqlite.js'
import type { Storage } from './storage.js'

export async function openStorage (databaseUrl: string, { poolSize }: { poolSize: number }): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl)
  return await openPostgres(databaseUrl, { poolSize })
}
