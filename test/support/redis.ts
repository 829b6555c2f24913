// Redis for the tests. `npm test` starts a standalone server and a
// three-node cluster (scripts/services/redis.js) and names them in
// PETSTORE_TEST_REDIS_URL and PETSTORE_TEST_REDIS_CLUSTER.
import { Cluster, Redis } from 'ioredis'
import { RedisStore, type RedisStoreOptions } from '../../src/limits/redis-store.js'
import { parseRedisUrl } from '../../src/limits/redis-url.js'
import { withTimeout } from './process.js'

export type RedisKind = 'single' | 'cluster'

const VARIABLES: Record<RedisKind, string> = {
  single: 'PETSTORE_TEST_REDIS_URL',
  cluster: 'PETSTORE_TEST_REDIS_CLUSTER'
}

/** The REDIS_URL of the shared test server or cluster; fails, never skips, when the tests were not started by npm test. */
function testRedisUrl (kind: RedisKind): string {
  const name = VARIABLES[kind]
  const value = process.env[name]
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run the tests with npm test, which starts Redis`)
  }
  return value
}

/** A RedisStore on the shared test server or cluster, connected. */
export async function openTestStore (kind: RedisKind, options: RedisStoreOptions = {}): Promise<RedisStore> {
  const url = testRedisUrl(kind)
  const store = new RedisStore(parseRedisUrl(url), options)
  if (!await store.whenReady(5000)) {
    await store.close()
    throw new Error(`no connection to Redis at ${url} within 5 s`)
  }
  return store
}

/** A plain client on the shared test server or cluster, to look at what the store wrote. */
export async function openTestClient (kind: RedisKind): Promise<Redis | Cluster> {
  const target = parseRedisUrl(testRedisUrl(kind))
  const client = target.kind === 'single' ? new Redis(target.url) : new Cluster(target.nodes)
  await withTimeout(new Promise((resolve) => client.once('ready', resolve)), 5000, 'a Redis client to connect')
  return client
}

/** The servers behind a client: itself, or every master of a cluster. */
function servers (client: Redis | Cluster): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client]
}

/** Every key on the servers behind `client` whose name matches `pattern`. */
export async function keysMatching (client: Redis | Cluster, pattern: string): Promise<Array<{ key: string, server: Redis }>> {
  const found: Array<{ key: string, server: Redis }> = []
  for (const server of servers(client)) {
    let cursor = '0'
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      for (const key of keys) found.push({ key, server })
    } while (cursor !== '0')
  }
  return found
}

/** Redis's clock, in Unix ms. */
export async function redisTime (client: Redis | Cluster): Promise<number> {
  const [seconds, micros] = await (servers(client)[0] ?? client).time()
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}
