import { it } from 'node:test'
import assert from 'node:assert/strict'
import { parseRedisUrl } from '../../src/limits/redis-url.js'

it('When REDIS_URL is redis:// or rediss://, then it names one server, given to the client as it is', () => {
  assert.deepEqual(parseRedisUrl('rediss://:pw@redis.example.test:6380/2'), { kind: 'single', url: 'rediss://:pw@redis.example.test:6380/2' })
})

it('When REDIS_URL is redis+cluster://, then it lists the seed nodes and the credentials all of them share', () => {
  assert.deepEqual(parseRedisUrl('redis+cluster://app:p%40ss@10.0.0.1:7000, 10.0.0.2,[::1]:7002'), {
    kind: 'cluster',
    nodes: [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 6379 }, { host: '::1', port: 7002 }],
    username: 'app',
    password: 'p@ss',
    tls: false
  })
  assert.deepEqual(parseRedisUrl('rediss+cluster://h:7000'), { kind: 'cluster', nodes: [{ host: 'h', port: 7000 }], username: undefined, password: undefined, tls: true })
})
