// The PostgreSQL cluster that `npm test` starts (scripts/services/postgres.js),
// and a fresh database in it for each test file that needs one.
import { randomUUID } from 'node:crypto'
import pg from 'pg'

function adminUrl (): string {
  const url = process.env.PETSTORE_TEST_POSTGRES_URL
  if (url === undefined || url === '') {
    throw new Error('PETSTORE_TEST_POSTGRES_URL is not set: run the tests with `npm test`, which starts PostgreSQL')
  }
  return url
}

/** Creates an empty database and gives its URL; the cluster is thrown away after the run. */
export async function freshPostgresDatabase (): Promise<string> {
  const name = `petstore_${randomUUID().replaceAll('-', '')}`
  const admin = new pg.Client({ connectionString: adminUrl() })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl())
  url.pathname = `/${name}`
  return url.href
}

/** The same URL through another port (a proxy in front of the server). */
export function viaPort (databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl)
  url.port = String(port)
  return url.href
}
