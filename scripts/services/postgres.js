// The PostgreSQL cluster every test shares (test/support/postgres-cluster.ts,
// compiled by `npm run build` before the tests run).
//
// env: PETSTORE_TEST_POSTGRES_URL, the cluster's `postgres` database as its
// superuser; tests make a database of their own in it.
import { PostgresCluster } from '../../dist/test/support/postgres-cluster.js'

export async function start ({ dir, log }) {
  const cluster = await PostgresCluster.start({ dir, log })
  return { env: { PETSTORE_TEST_POSTGRES_URL: cluster.url }, stop: async () => await cluster.stop() }
}
