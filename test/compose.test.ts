// compose.yaml (docs/DEPLOYING.md), as `docker-compose config` reads and
// resolves it: no daemon, image or container is needed for that, and none
// can be had here (no image registry is reachable), so what is checked is
// the file's meaning, not a run of it.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { before, describe, test } from 'node:test'
import { parse } from 'yaml'
import { PROJECT_ROOT } from './support/process.js'
import { scaledOutEnvironment } from './support/scaled-out.js'

const run = promisify(execFile)

interface Service {
  image?: string
  build?: { context?: string }
  environment?: Record<string, string>
  ports?: Array<{ published?: number | string, target?: number | string } | string>
  expose?: Array<string | number>
  healthcheck?: { test?: string[] | string, disable?: boolean }
  depends_on?: Record<string, { condition?: string }> | string[]
  stop_grace_period?: string
}

const INSTANCES = ['petstore-a', 'petstore-b']

/** The file as docker-compose resolves it, with none of this machine's variables (the defaults apply). */
async function composeConfig (): Promise<{ services: Record<string, Service> }> {
  const executable = process.env.PETSTORE_TEST_DOCKER_COMPOSE
  assert.ok(executable !== undefined && executable !== '', 'PETSTORE_TEST_DOCKER_COMPOSE is not set: run the tests with npm test, which finds or installs docker-compose')
  const { stdout } = await run(executable, ['--file', join(PROJECT_ROOT, 'compose.yaml'), '--project-directory', PROJECT_ROOT, 'config'], {
    env: { PATH: process.env.PATH ?? '' },
    timeout: 60_000
  })
  return parse(stdout) as { services: Record<string, Service> }
}

const healthTest = (service: Service | undefined): string =>
  [service?.healthcheck?.test ?? []].flat().join(' ')

describe('compose.yaml', () => {
  let services: Record<string, Service> = {}

  before(async () => {
    services = (await composeConfig()).services
  })

  test('When it is read, then it runs PostgreSQL 17, Redis 7, two instances built from the Dockerfile and a balancer', () => {
    assert.deepEqual(Object.keys(services).sort(), ['balancer', 'petstore-a', 'petstore-b', 'postgres', 'redis'])
    assert.match(services.postgres?.image ?? '', /^postgres:17(\b|$)/)
    assert.match(services.redis?.image ?? '', /^redis:7(\b|$)/)
    for (const name of INSTANCES) {
      assert.equal(services[name]?.build?.context, PROJECT_ROOT, `${name} is built from the Dockerfile at the root`)
    }
  })

  test('When it is read, then only the balancer publishes a port, and no instance publishes its admin port', () => {
    const published = Object.entries(services).filter(([, service]) => (service.ports ?? []).length > 0).map(([name]) => name)
    assert.deepEqual(published, ['balancer'])
    assert.deepEqual(services.balancer?.ports?.map((port) => typeof port === 'string' ? port : `${port.published}:${port.target}`), ['8080:8080'])
    for (const name of INSTANCES) {
      const adminPort = services[name]?.environment?.ADMIN_PORT
      assert.ok(adminPort !== undefined, `${name} serves metrics`)
      // Reachable on the project's network, for a Prometheus there, and nowhere else.
      assert.deepEqual(services[name]?.expose?.map(String), [adminPort])
    }
  })

  test('When it is read, then every server has a health check, and each service waits for those it needs to be healthy', () => {
    assert.match(healthTest(services.postgres), /pg_isready/)
    assert.match(healthTest(services.redis), /redis-cli ping/)
    for (const name of INSTANCES) {
      assert.match(healthTest(services[name]), /^CMD node .*\/readyz/, `${name}'s health check asks /readyz with node`)
      assert.deepEqual(services[name]?.depends_on, { postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } })
      // The service's own stop takes up to 30 s for requests in flight and 2 s for its log (docs/OPERATING.md).
      assert.equal(services[name]?.stop_grace_period, '35s')
    }
    assert.deepEqual(services.balancer?.depends_on, { 'petstore-a': { condition: 'service_healthy' }, 'petstore-b': { condition: 'service_healthy' } })
  })

  test('When it is read, then both instances have the environment the image test runs its containers on PostgreSQL and Redis with', () => {
    const expected = scaledOutEnvironment({
      databaseUrl: 'postgres://petstore:petstore@postgres:5432/petstore',
      redisUrl: 'redis://redis:6379',
      publicBaseUrl: 'http://localhost:8080/v1',
      adminHost: '0.0.0.0',
      adminPort: 9090
    })
    for (const name of INSTANCES) assert.deepEqual(services[name]?.environment, expected, name)
  })
})
