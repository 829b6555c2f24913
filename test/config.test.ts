import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { ConfigError, loadConfig, sharesPorts } from '../src/config.js'
import { generateToken } from '../src/keys/tokens.js'

describe('configuration', () => {
  it('When nothing is set, then the documented defaults apply', () => {
    const config = loadConfig({})

    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.port, 8080)
    assert.equal(config.databaseUrl, 'sqlite:./data/petstore.db')
    assert.equal(config.redisUrl, undefined)
    assert.equal(config.environment, 'production')
    assert.equal(config.publicBaseUrl, 'http://127.0.0.1:8080/v1')
    assert.equal(config.selfBaseUrl, 'http://127.0.0.1:8080/v1')
    assert.equal(config.trustProxy, false)
    assert.deepEqual(config.corsOrigins, [])
    assert.equal(config.banThreshold, 30)
    assert.equal(config.banSeconds, 900)
    assert.equal(config.logFormat, 'json')
    assert.equal(config.adminPort, undefined)
    assert.deepEqual(config.shed, { mode: 'on', eventLoopDelayMs: 200, dbPoolWaitMs: 500 })
    assert.ok(Object.isFrozen(config))
    assert.ok(Object.isFrozen(config.shed))
  })

  it('When the instance is staging, then its own address is STAGING_BASE_URL, else its listening address', () => {
    const withStaging = loadConfig({ PETSTORE_ENV: 'staging', PUBLIC_BASE_URL: 'https://api.example.test/v1', STAGING_BASE_URL: 'https://staging.example.test/v1/' })
    const without = loadConfig({ PETSTORE_ENV: 'staging', PUBLIC_BASE_URL: 'https://api.example.test/v1', PORT: '9000' })

    assert.equal(withStaging.selfBaseUrl, 'https://staging.example.test/v1')
    assert.equal(without.selfBaseUrl, 'http://127.0.0.1:9000/v1')
  })

  const bad: Array<[string, Record<string, string>, RegExp]> = [
    ['PORT is not a number', { PORT: 'eighty' }, /PORT/],
    ['PORT is out of range', { PORT: '70000' }, /PORT/],
    ['PETSTORE_ENV is unknown', { PETSTORE_ENV: 'prod' }, /PETSTORE_ENV/],
    ['PUBLIC_BASE_URL does not end in /v1', { PUBLIC_BASE_URL: 'https://api.example.test' }, /PUBLIC_BASE_URL.*\/v1/],
    ['PUBLIC_BASE_URL is not a URL', { PUBLIC_BASE_URL: 'api.example.test/v1' }, /PUBLIC_BASE_URL/],
    ['STAGING_BASE_URL has a query', { STAGING_BASE_URL: 'https://s.example.test/v1?x=1' }, /STAGING_BASE_URL/],
    ['DATABASE_URL has an unknown scheme', { DATABASE_URL: 'mysql://u:secret@h/db' }, /DATABASE_URL.*u:\*\*\*@/],
    ['REDIS_URL has an unknown scheme, with its password hidden', { REDIS_URL: 'http://:secret@redis.example.test:6379' }, /REDIS_URL.*\/\/:\*\*\*@/],
    ['REDIS_URL names no host', { REDIS_URL: 'redis://' }, /REDIS_URL/],
    ['REDIS_URL has a path that is not a database number', { REDIS_URL: 'redis://h:6379/cache' }, /REDIS_URL/],
    ['REDIS_URL lists a cluster node that is not HOST:PORT', { REDIS_URL: 'redis+cluster://h1:7000,h2:x' }, /REDIS_URL.*h2:x/],
    ['REDIS_URL gives a cluster a database number', { REDIS_URL: 'redis+cluster://h1:7000/1' }, /REDIS_URL/],
    ['TRUST_PROXY is neither a flag, a number nor addresses', { TRUST_PROXY: 'yes' }, /TRUST_PROXY/],
    ['RATE_LIMIT_BAN_THRESHOLD is zero', { RATE_LIMIT_BAN_THRESHOLD: '0' }, /RATE_LIMIT_BAN_THRESHOLD/],
    ['CORS_ORIGINS holds something that is not an origin', { CORS_ORIGINS: 'https://ok.example.test,notanorigin' }, /CORS_ORIGINS.*notanorigin/],
    ['ADMIN_PORT is the public port', { PORT: '9000', ADMIN_PORT: '9000' }, /ADMIN_PORT.*PORT/],
    ['ADMIN_PORT is out of range', { ADMIN_PORT: '65536' }, /ADMIN_PORT/],
    ['LOG_FORMAT is unknown', { LOG_FORMAT: 'xml' }, /LOG_FORMAT/],
    ['CORS_ORIGINS holds a URL with a path', { CORS_ORIGINS: 'https://app.example.test/page' }, /CORS_ORIGINS/],
    ['OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL, with its password hidden', { OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://u:secret@collector:4317' }, /OTEL_EXPORTER_OTLP_ENDPOINT.*u:\*\*\*@/],
    ['OTEL_TRACES_SAMPLER is unknown', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER/],
    ['OTEL_TRACES_SAMPLER_ARG is above 1', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER_ARG: '1.5' }, /OTEL_TRACES_SAMPLER_ARG/],
    ['SHED is not off, log or on', { SHED: 'yes' }, /SHED must be one of off, log, on/],
    ['SHED_EVENT_LOOP_DELAY_MS is below 10', { SHED_EVENT_LOOP_DELAY_MS: '5' }, /SHED_EVENT_LOOP_DELAY_MS/],
    ['SHED_DB_POOL_WAIT_MS is past the 5 s a wait for a connection may last', { SHED_DB_POOL_WAIT_MS: '6000' }, /SHED_DB_POOL_WAIT_MS must be an integer from 10 to 5000/],
    ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE exceeds the queue', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200' }, /OTEL_BSP_MAX_EXPORT_BATCH_SIZE/]
  ]
  for (const [when, env, message] of bad) {
    it(`When ${when}, then start fails with a message naming the variable`, () => {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && message.test(error.message))
    })
  }

  it('When ADMIN_PORT is 0 or another port, then metrics get that port', () => {
    assert.equal(loadConfig({ ADMIN_PORT: '0', PORT: '0' }).adminPort, 0)
    assert.equal(loadConfig({ ADMIN_PORT: '9100' }).adminPort, 9100)
  })

  it('When HOST opens the public port to every address, then the admin listener stays on loopback unless ADMIN_HOST says otherwise', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0', ADMIN_PORT: '9100' }).adminHost, '127.0.0.1')
    assert.equal(loadConfig({ HOST: '0.0.0.0', ADMIN_PORT: '9100', ADMIN_HOST: '10.0.0.5' }).adminHost, '10.0.0.5')
  })

  describe('ADMIN_TOKEN', () => {
    const refusal = (value: string): ConfigError => {
      let caught: unknown
      try {
        loadConfig({ ADMIN_PORT: '9100', ADMIN_TOKEN: value })
      } catch (error) {
        caught = error
      }
      assert.ok(caught instanceof ConfigError, `ADMIN_TOKEN ${JSON.stringify(value)} was taken`)
      return caught
    }

    it('When ADMIN_TOKEN is shorter than 32 characters, then start fails naming ADMIN_TOKEN, without its value', () => {
      for (const value of ['s3cr3t-admin-token', 'x'.repeat(31)]) {
        const error = refusal(value)
        assert.match(error.message, /ADMIN_TOKEN/)
        assert.match(error.message, /32/)
        assert.equal(error.message.includes(value), false, `the message echoes the value: ${error.message}`)
      }
    })

    it('When ADMIN_TOKEN holds a space or a character that is not visible ASCII, then start fails naming ADMIN_TOKEN, without its value', () => {
      for (const value of [`${'a'.repeat(20)} ${'b'.repeat(20)}`, `${'a'.repeat(40)}\t`, `${'a'.repeat(40)}é`]) {
        const error = refusal(value)
        assert.match(error.message, /ADMIN_TOKEN/)
        assert.equal(error.message.includes(value.trim()), false, `the message echoes the value: ${error.message}`)
      }
    })

    it('When ADMIN_TOKEN is shaped like an API key, then start fails naming ADMIN_TOKEN, without its value', () => {
      for (const environment of ['production', 'staging'] as const) {
        const value = generateToken(environment)
        const error = refusal(value)
        assert.match(error.message, /ADMIN_TOKEN.*API key/)
        assert.equal(error.message.includes(value), false)
      }
    })

    it('When ADMIN_TOKEN is plainly not random (one character, a repeated pattern, a sequence, few distinct characters), then start fails naming ADMIN_TOKEN, saying how to make one, without its value (regression: 32 × a was taken)', () => {
      for (const value of ['a'.repeat(32), '0123456789abcdef0123456789abcdef', 'A1b/'.repeat(16), 'abcdefghijklmnopqrstuvwxyz012345', 'aabbaabbabababbbaaabbbababaabbab']) {
        const error = refusal(value)
        assert.match(error.message, /^ADMIN_TOKEN is plainly not random/)
        assert.match(error.message, /openssl rand -base64 32/)
        assert.match(error.message, /randomBytes\(32\)/)
        assert.equal(error.message.includes(value), false, `the message echoes the value: ${error.message}`)
      }
    })

    it('When ADMIN_TOKEN is long and varied but guessable (a password pattern, words joined by hyphens, the example UUID of RFC 4122, a passphrase), then start fails naming ADMIN_TOKEN, saying how to make one, without its value', () => {
      for (const value of [
        'Password123!Password456!Password789!', 'petstore-admin-token-for-production', 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6',
        'correct-horse-battery-staple-admin!', 'Correct-Horse-Battery-Staple-Admin', 'PETSTORE_ADMIN_TOKEN_FOR_PRODUCTION', randomUUID()
      ]) {
        const error = refusal(value)
        assert.match(error.message, /^ADMIN_TOKEN /)
        assert.match(error.message, /openssl rand -base64 32/)
        assert.equal(error.message.includes(value), false, `the message echoes the value: ${error.message}`)
      }
    })

    it('When ADMIN_TOKEN holds a character that neither hex nor base64 has, then start fails naming ADMIN_TOKEN, saying how to make one, without its value', () => {
      for (const value of ['adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg~!', 'q8Zr/4Kd+Wm2Xp9Lt0Vb7Ns3Hc6Jf1Gy5Ue8Ra2Io4E=.', 'Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg7Rt$']) {
        const error = refusal(value)
        assert.match(error.message, /^ADMIN_TOKEN must be hex or base64/)
        assert.match(error.message, /openssl rand -base64 32/)
        assert.equal(error.message.includes(value), false, `the message echoes the value: ${error.message}`)
      }
    })

    it('When ADMIN_TOKEN is made as docs/KEYS.md says (openssl rand -hex 16 or 32 in either case, -base64 24 or 32, randomBytes base64url), then it is taken, every one of 4,000 draws', () => {
      for (let i = 0; i < 500; i++) {
        for (const value of [
          randomBytes(16).toString('hex'), randomBytes(16).toString('hex').toUpperCase(), randomBytes(32).toString('hex'),
          randomBytes(24).toString('base64'), randomBytes(32).toString('base64'), randomBytes(24).toString('base64url'),
          randomBytes(32).toString('base64url'), randomBytes(32).toString('base64').replace(/=+$/, '')
        ]) {
          assert.equal(loadConfig({ ADMIN_PORT: '9100', ADMIN_TOKEN: value }).adminToken, value)
        }
      }
    })

    it('When ADMIN_TOKEN is 32 or more characters of hex or base64 drawn at random, then it is taken as given; unset or empty, the admin API is off', () => {
      for (const value of ['9f86d081884c7d659a2feaa0c55ad015', 'q8Zr/4Kd+Wm2Xp9Lt0Vb7Ns3Hc6Jf1Gy5Ue8Ra2Io4E=', 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg']) {
        assert.equal(loadConfig({ ADMIN_PORT: '9100', ADMIN_TOKEN: value }).adminToken, value)
      }
      assert.equal(loadConfig({ ADMIN_PORT: '9100' }).adminToken, undefined)
      assert.equal(loadConfig({ ADMIN_PORT: '9100', ADMIN_TOKEN: '' }).adminToken, undefined)
    })
  })

  it('When REDIS_URL names one server or a cluster, then it is kept as given', () => {
    for (const url of ['redis://127.0.0.1:6379', 'rediss://:secret@redis.example.test/2', 'redis+cluster://u:p@10.0.0.1:7000,10.0.0.2:7000,[::1]:7002']) {
      assert.equal(loadConfig({ REDIS_URL: url }).redisUrl, url)
    }
  })

  it('When TRUST_PROXY lists addresses and ranges, then they are kept', () => {
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16,::1' }).trustProxy, ['10.0.0.1', '192.168.0.0/16', '::1'])
  })

  it('When OTEL_EXPORTER_OTLP_ENDPOINT is unset, empty, or OTEL_SDK_DISABLED is true, then tracing is off', () => {
    assert.equal(loadConfig({}).tracing, undefined)
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).tracing, undefined)
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing, undefined)
  })

  it('When OTEL_EXPORTER_OTLP_ENDPOINT is set, then tracing is on with the standard defaults, or the values given', () => {
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, {
      endpoint: 'http://collector:4318/',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      scheduleDelayMs: 5000,
      exportTimeoutMs: 30_000,
      maxQueueSize: 2048,
      maxExportBatchSize: 512
    })
    const given = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example.test:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '50'
    }).tracing
    assert.equal(given?.sampler, 'parentbased_traceidratio')
    assert.equal(given?.samplerRatio, 0.25)
    assert.equal(given?.scheduleDelayMs, 50)
  })

  it('When WORKERS is unset, a number or auto, then that many workers serve, auto one per core; anything else is refused naming it', () => {
    assert.equal(loadConfig({}).workers, 1)
    assert.equal(loadConfig({ WORKERS: '1' }).workers, 1)
    if (sharesPorts(process.versions.node)) {
      assert.equal(loadConfig({ WORKERS: '3' }).workers, 3)
      assert.equal(loadConfig({ WORKERS: 'auto' }).workers, availableParallelism())
    } else {
      assert.throws(() => loadConfig({ WORKERS: '3' }), (error: unknown) => error instanceof ConfigError && /WORKERS=3 needs Node\.js 22\.12 or later/.test(error.message))
    }
    for (const bad of ['0', '-1', '2.5', 'all', '257']) {
      assert.throws(() => loadConfig({ WORKERS: bad }), (error: unknown) => error instanceof ConfigError && error.message.startsWith('WORKERS must be auto'), bad)
    }
  })

  it('When SHED and its thresholds are set, then they are kept as given', () => {
    const config = loadConfig({ SHED: 'log', SHED_EVENT_LOOP_DELAY_MS: '350', SHED_DB_POOL_WAIT_MS: '5000' })

    assert.deepEqual(config.shed, { mode: 'log', eventLoopDelayMs: 350, dbPoolWaitMs: 5000 })
    assert.equal(loadConfig({ SHED: 'off' }).shed.mode, 'off')
  })

  it('When the Node.js version is read, then only 22.12 and later share a port between threads', () => {
    assert.deepEqual(['20.20.2', '22.11.0', '22.12.0', '23.0.0', '23.1.0', '24.0.0'].map(sharesPorts), [false, false, true, false, true, true])
  })
})
