// Environment → validated, frozen, typed configuration. Read once at start;
// a bad value stops the process with a message that names the variable.
import { availableParallelism } from 'node:os'
import ipaddr from 'ipaddr.js'
import { readBrownouts, type Brownout } from './deprecations.js'
import { ENVIRONMENTS, type Environment } from './domain.js'
import { inspectToken } from './keys/tokens.js'
import { USAGE_FLUSH_MS } from './keys/usage.js'
import { parseRedisUrl } from './limits/redis-url.js'
import type { LogFormat } from './telemetry/log.js'

export interface Config {
  readonly host: string
  readonly port: number
  readonly databaseUrl: string
  /** PostgreSQL connections this instance may hold. */
  readonly databasePoolSize: number
  readonly redisUrl: string | undefined
  readonly environment: Environment
  /** The production address, as published in the OpenAPI document. Ends in /v1. */
  readonly publicBaseUrl: string
  /** The staging address, as published in the OpenAPI document. Ends in /v1. */
  readonly stagingBaseUrl: string | undefined
  /** This instance's own address: every absolute URL it writes starts with it. */
  readonly selfBaseUrl: string
  /** True when selfBaseUrl is the listening address, whose port is known only after listen when PORT=0. */
  readonly selfBaseUrlIsLocal: boolean
  readonly trustProxy: boolean | number | string[]
  readonly corsOrigins: readonly string[]
  readonly banThreshold: number
  readonly banSeconds: number
  readonly logLevel: string
  /** `json` for machines, `pretty` for people. */
  readonly logFormat: LogFormat
  /** Where Prometheus metrics are served, on `adminHost`; undefined: nowhere. */
  readonly adminPort: number | undefined
  /**
   * The operators' listener's address: loopback unless set, whatever HOST
   * is, so that opening the public port to the world does not open this one.
   */
  readonly adminHost: string
  /**
   * The bearer token of the admin API (docs/KEYS.md: The admin API), served on
   * the admin listener when both it and `adminPort` are set; undefined: off.
   */
  readonly adminToken: string | undefined
  /** How often usage counts are written to the database (keys/usage.ts): at most this much is lost to a crash. */
  readonly usageFlushMs: number
  /** Where traces go, and how; undefined: tracing is off, and nothing of OpenTelemetry is loaded. */
  readonly tracing: TracingConfig | undefined
  /** Worker threads serving the public port (docs/WORKERS.md); 1: the process serves it itself. */
  readonly workers: number
  /** Shedding API requests while the service is overloaded (docs/OPERATING.md: Overload). */
  readonly shed: ShedConfig
  /** When the deprecated operations answer as after their sunset (docs/OPERATING.md: Brownouts), sorted; none by default. */
  readonly deprecationBrownouts: readonly Brownout[]
  /** WEBHOOK_ALLOW_PRIVATE: webhooks may go to http:// and to private addresses (docs/WEBHOOKS.md), for development and tests. */
  readonly webhookAllowPrivate: boolean
  /** Where the keys that sign secret-scanning reports are read (docs/KEYS.md: Leaked tokens): https, a file: URL, or http to a loopback address. */
  readonly secretScanningKeysUrl: string
}

/** GitHub's list of the keys that sign its secret scanning partner reports. */
const GITHUB_SECRET_SCANNING_KEYS = 'https://api.github.com/meta/public_keys/secret_scanning'

/** SHED's modes: `log` writes what it would shed and serves it, so that thresholds can be tried before they refuse anyone. */
const SHED_MODES = ['off', 'log', 'on'] as const
export type ShedMode = typeof SHED_MODES[number]

interface ShedConfig {
  readonly mode: ShedMode
  /** The event loop's mean delay over half a second above which API requests are shed. */
  readonly eventLoopDelayMs: number
  /** How long an operation may have waited for a PostgreSQL connection before API requests are shed. */
  readonly dbPoolWaitMs: number
}

/**
 * The OpenTelemetry variables the service reads itself (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/);
 * the exporter reads its own (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, …_HEADERS, …_TIMEOUT,
 * …_COMPRESSION) and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; spans go to its /v1/traces. */
  readonly endpoint: string
  readonly sampler: TraceSampler
  /** OTEL_TRACES_SAMPLER_ARG: the share of traces the ratio samplers keep. */
  readonly samplerRatio: number
  /** The batch span processor: OTEL_BSP_SCHEDULE_DELAY, …_EXPORT_TIMEOUT, …_MAX_QUEUE_SIZE, …_MAX_EXPORT_BATCH_SIZE. */
  readonly scheduleDelayMs: number
  readonly exportTimeoutMs: number
  readonly maxQueueSize: number
  readonly maxExportBatchSize: number
}

const TRACE_SAMPLERS = [
  'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'
] as const
export type TraceSampler = typeof TRACE_SAMPLERS[number]

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

export function loadConfig (env: Env = process.env): Config {
  const host = nonEmpty(env, 'HOST') ?? '127.0.0.1'
  const port = integer(env, 'PORT', 8080, 0, 65535)
  const environment = oneOf(env, 'PETSTORE_ENV', ENVIRONMENTS, 'production')
  const localBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`
  const publicBaseUrl = baseUrl(env, 'PUBLIC_BASE_URL') ?? localBase
  const stagingBaseUrl = baseUrl(env, 'STAGING_BASE_URL')
  const selfBaseUrl = environment === 'production' ? publicBaseUrl : (stagingBaseUrl ?? localBase)

  return Object.freeze({
    host,
    port,
    databaseUrl: databaseUrl(env),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    redisUrl: redisUrl(env),
    environment,
    publicBaseUrl,
    stagingBaseUrl,
    selfBaseUrl,
    selfBaseUrlIsLocal: selfBaseUrl === localBase,
    trustProxy: trustProxy(env),
    corsOrigins: Object.freeze(corsOrigins(env)),
    banThreshold: integer(env, 'RATE_LIMIT_BAN_THRESHOLD', 30, 1, 1_000_000),
    banSeconds: integer(env, 'RATE_LIMIT_BAN_SECONDS', 900, 1, 31_536_000),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['json', 'pretty'] as const, 'json'),
    adminPort: adminPort(env, port),
    adminHost: nonEmpty(env, 'ADMIN_HOST') ?? '127.0.0.1',
    adminToken: adminToken(env),
    usageFlushMs: integer(env, 'USAGE_FLUSH_MS', USAGE_FLUSH_MS, 100, USAGE_FLUSH_MS),
    tracing: tracingConfig(env),
    workers: workers(env),
    shed: Object.freeze({
      mode: oneOf(env, 'SHED', SHED_MODES, 'on'),
      eventLoopDelayMs: integer(env, 'SHED_EVENT_LOOP_DELAY_MS', 200, 10, 60_000),
      // A wait for a connection ends at 5 s (db/postgres/storage.ts), so 5000 never sheds.
      dbPoolWaitMs: integer(env, 'SHED_DB_POOL_WAIT_MS', 500, 10, 5000)
    }),
    deprecationBrownouts: brownouts(env),
    webhookAllowPrivate: oneOf(env, 'WEBHOOK_ALLOW_PRIVATE', ['true', 'false'] as const, 'false') === 'true',
    secretScanningKeysUrl: secretScanningKeysUrl(env)
  })
}

function brownouts (env: Env): readonly Brownout[] {
  const raw = nonEmpty(env, 'DEPRECATION_BROWNOUTS')
  if (raw === undefined) return Object.freeze([])
  const reading = readBrownouts(raw)
  if (!reading.ok) throw new ConfigError(`DEPRECATION_BROWNOUTS must be comma-separated intervals START/END in UTC that do not overlap: ${reading.reason}`)
  return Object.freeze(reading.brownouts.map((brownout) => Object.freeze(brownout)))
}

/** More workers than this is a typo, not a machine: each holds its own heap and database connection. */
const MAX_WORKERS = 256

/** `auto` is one per core this process may use; above 1, the Node.js must let several threads listen on one port. */
function workers (env: Env, nodeVersion = process.versions.node): number {
  const raw = nonEmpty(env, 'WORKERS')
  if (raw !== undefined && raw !== 'auto' && !(/^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= MAX_WORKERS)) {
    throw new ConfigError(`WORKERS must be auto (one per core) or an integer from 1 to ${MAX_WORKERS}, got "${raw}"`)
  }
  const count = raw === undefined ? 1 : raw === 'auto' ? Math.min(availableParallelism(), MAX_WORKERS) : Number(raw)
  if (count > 1 && !sharesPorts(nodeVersion)) {
    throw new ConfigError(`WORKERS=${raw ?? ''} needs Node.js 22.12 or later, whose workers can all listen on one port (reusePort); this is Node.js ${nodeVersion}. Run with WORKERS=1, or on a newer Node.js`)
  }
  return count
}

/** net.Server's `reusePort` came in Node.js 23.1 and 22.12. */
export function sharesPorts (nodeVersion: string): boolean {
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number)
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12)
}

/**
 * Tracing's settings, or undefined when it is off: OTEL_EXPORTER_OTLP_ENDPOINT
 * unset or empty, or OTEL_SDK_DISABLED=true. Read by the process entry,
 * before the rest of the service is loaded, and again with the rest of the
 * configuration, which reports a bad value.
 */
export function tracingConfig (env: Env = process.env): TracingConfig | undefined {
  const raw = nonEmpty(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (raw === undefined || nonEmpty(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined
  let url: URL | undefined
  try { url = new URL(raw) } catch {}
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, the collector's OTLP/HTTP address, got "${redactUrl(raw)}"`)
  }
  const maxQueueSize = integer(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000)
  return Object.freeze({
    endpoint: url.href,
    sampler: oneOf(env, 'OTEL_TRACES_SAMPLER', TRACE_SAMPLERS, 'parentbased_always_on'),
    samplerRatio: ratio(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
    scheduleDelayMs: integer(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    exportTimeoutMs: integer(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000),
    maxQueueSize,
    maxExportBatchSize: integer(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', Math.min(512, maxQueueSize), 1, maxQueueSize)
  })
}

function ratio (env: Env, name: string, fallback: number): number {
  const raw = nonEmpty(env, name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!/^\d+(\.\d+)?$/.test(raw) || value > 1) throw new ConfigError(`${name} must be a number from 0 to 1, got "${raw}"`)
  return value
}

function nonEmpty (env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = nonEmpty(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function oneOf<T extends string> (env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = nonEmpty(env, name)
  if (raw === undefined) return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

/** Metrics are for operators: never on the port the public reaches. */
function adminPort (env: Env, publicPort: number): number | undefined {
  if (nonEmpty(env, 'ADMIN_PORT') === undefined) return undefined
  const port = integer(env, 'ADMIN_PORT', 0, 0, 65535)
  if (port !== 0 && port === publicPort) throw new ConfigError(`ADMIN_PORT must differ from PORT (${publicPort}): metrics are never served on the public port`)
  return port
}

/** The shortest ADMIN_TOKEN taken: 32 characters from `openssl rand -hex 16` are 128 bits. */
const ADMIN_TOKEN_MIN_LENGTH = 32
/** How to make one, in every refusal. */
const MAKE_ADMIN_TOKEN = 'make one with `openssl rand -base64 32` or `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'base64url\'))"`'
/**
 * A token's character frequencies must carry this many bits (Shannon's
 * estimate times its length): 32 random hex digits carry about 110, and
 * fell below 92 in none of 300,000 draws.
 */
const ADMIN_TOKEN_MIN_BITS = 80
/** Random hex has about 19% of neighbouring pairs equal or adjacent (`aa`, `ab`); `abcd…` and `1234…` have nearly all. */
const ADMIN_TOKEN_MAX_NEIGHBOURS = 0.6

/**
 * What `openssl rand -hex` or `-base64` and `randomBytes().toString()` write: hex
 * digits in one case, or base64 or base64url, padded or not. Every other
 * character is one a person chose (`!`, `~`, a space), and a token's
 * strength cannot be told from its characters without dictionaries of
 * words and passwords, several megabytes to load (docs/KEYS.md: The admin token).
 */
const GENERATED = /^(?:[0-9a-f]+|[0-9A-F]+|[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+={0,2})$/
const HEX = /^(?:[0-9a-f]+|[0-9A-F]+)$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** One part of a token written as words: a word in one case, perhaps capitalised, perhaps followed by a number, or a number. */
const WORD = /^(?:[A-Za-z][a-z]*|[A-Z]+)[0-9]*$|^[0-9]+$/

/** It can mint keys: long enough not to be guessed, sendable in a header, and never mistaken for an API key. */
function adminToken (env: Env): string | undefined {
  const raw = env.ADMIN_TOKEN
  if (raw === undefined || raw === '') return undefined
  // The value is never echoed: an error message ends up in logs.
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError(`ADMIN_TOKEN must be visible ASCII characters only (no spaces): ${MAKE_ADMIN_TOKEN}`)
  if (raw.length < ADMIN_TOKEN_MIN_LENGTH) {
    throw new ConfigError(`ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters long (it has ${raw.length}): ${MAKE_ADMIN_TOKEN}`)
  }
  if (inspectToken(raw).ok) throw new ConfigError(`ADMIN_TOKEN must not be an API key: ${MAKE_ADMIN_TOKEN}`)
  if (!GENERATED.test(raw)) {
    throw new ConfigError(`ADMIN_TOKEN must be hex or base64 as a random generator writes it (letters, digits, + and / or - and _, perhaps = at the end): ${MAKE_ADMIN_TOKEN}`)
  }
  const why = notRandom(raw)
  if (why !== undefined) throw new ConfigError(`ADMIN_TOKEN is plainly not random (${why}): ${MAKE_ADMIN_TOKEN}`)
  return raw
}

/**
 * Why a token is plainly not random, or undefined: a pattern repeated
 * (`abcabc…`), a UUID, base64 in one case or made of words joined by
 * punctuation, mostly runs or sequences (`aaaa`, `abcd`, `1234`), or
 * characters too few or too unevenly used to carry ADMIN_TOKEN_MIN_BITS. A heuristic against tokens
 * typed by people, not a proof of randomness (docs/KEYS.md: The admin token).
 */
function notRandom (token: string): string | undefined {
  for (let period = 1; period <= token.length / 2; period++) {
    if (token.slice(period) === token.slice(0, token.length - period)) return 'it repeats a shorter pattern'
  }
  // Made to be unique, not secret: a version 1 UUID is a time and a network
  // address, and the ones printed in standards and documents get copied.
  if (UUID.test(token)) return 'it is a UUID'
  if (!HEX.test(token)) {
    // Random base64 lacks small or capital letters once in some 9 million draws
    // of 24 bytes and 3 billion of 32 (2 × (38/64)^32, ^43).
    if (!/[a-z]/.test(token) || !/[A-Z]/.test(token)) return 'its letters are all of one case, as words are written, where random base64 mixes both'
    // Random base64 holds + / - _ once in 32 characters: three parts each a word
    // or a number come by chance once in some 600 million draws of 24 bytes and 10^12 of 32.
    const parts = token.split(/[^A-Za-z0-9]+/).filter((part) => part !== '')
    if (parts.length >= 3 && parts.every((part) => WORD.test(part))) return 'it is words joined by punctuation'
  }
  let neighbours = 0
  for (let i = 1; i < token.length; i++) {
    if (Math.abs(token.charCodeAt(i) - token.charCodeAt(i - 1)) <= 1) neighbours++
  }
  if (neighbours / (token.length - 1) > ADMIN_TOKEN_MAX_NEIGHBOURS) return 'it is mostly runs or sequences of characters'
  const counts = new Map<string, number>()
  for (const char of token) counts.set(char, (counts.get(char) ?? 0) + 1)
  let bits = 0
  for (const count of counts.values()) bits -= count * Math.log2(count / token.length)
  if (bits < ADMIN_TOKEN_MIN_BITS) return `its characters carry about ${Math.floor(bits)} bits, fewer than ${ADMIN_TOKEN_MIN_BITS}`
  return undefined
}

function list (env: Env, name: string): string[] {
  return (nonEmpty(env, name) ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
}

function baseUrl (env: Env, name: string): string | undefined {
  const raw = nonEmpty(env, name)
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`)
  }
  if (url.search !== '' || url.hash !== '') {
    throw new ConfigError(`${name} must not carry a query or a fragment, got "${raw}"`)
  }
  const href = withoutTrailingSlashes(url.href)
  if (!href.endsWith('/v1')) throw new ConfigError(`${name} must end with the version segment /v1, got "${raw}"`)
  return href
}

/**
 * The keys that verify a report decide which reports revoke keys: read over
 * https, from a file, or over plain http only from this machine itself
 * (a local mirror, or a test standing in for GitHub).
 */
function secretScanningKeysUrl (env: Env): string {
  const raw = nonEmpty(env, 'SECRET_SCANNING_KEYS_URL')
  if (raw === undefined) return GITHUB_SECRET_SCANNING_KEYS
  let url: URL | undefined
  try { url = new URL(raw) } catch {}
  const loopback = url !== undefined && url.protocol === 'http:' && isLoopback(url.hostname)
  if (url === undefined || !(url.protocol === 'https:' || url.protocol === 'file:' || loopback)) {
    throw new ConfigError(`SECRET_SCANNING_KEYS_URL must be an https:// URL, a file: URL, or http:// to a loopback address, got "${redactUrl(raw)}"`)
  }
  return url.href
}

function isLoopback (hostname: string): boolean {
  if (hostname === 'localhost') return true
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === 'loopback'
}

/** Not `/\/+$/`: that pattern retries from every slash of a long run, in quadratic time. */
function withoutTrailingSlashes (text: string): string {
  let end = text.length
  while (end > 0 && text[end - 1] === '/') end--
  return text.slice(0, end)
}

function databaseUrl (env: Env): string {
  const raw = nonEmpty(env, 'DATABASE_URL') ?? 'sqlite:./data/petstore.db'
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(raw)) {
    throw new ConfigError(`DATABASE_URL must be sqlite:PATH, sqlite::memory: or postgres://…, got "${redactUrl(raw)}"`)
  }
  return raw
}

function redisUrl (env: Env): string | undefined {
  const raw = nonEmpty(env, 'REDIS_URL')
  if (raw === undefined) return undefined
  try {
    parseRedisUrl(raw)
  } catch (error) {
    const why = error instanceof RangeError ? error.message : String(error)
    throw new ConfigError(`REDIS_URL ${why}: redis://HOST:PORT for one server, redis+cluster://HOST:PORT,HOST:PORT,… for a cluster; got "${redactUrl(raw)}"`)
  }
  return raw
}

/** Origins as browsers send them: scheme, host and port, nothing else. */
function corsOrigins (env: Env): string[] {
  const origins = list(env, 'CORS_ORIGINS')
  for (const origin of origins) {
    let parsed: URL | undefined
    try { parsed = new URL(origin) } catch {}
    if (parsed === undefined || parsed.origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS must list origins such as https://app.example.com (scheme, host, optional port, no path); "${origin}" is not one`)
    }
  }
  return origins
}

// https://fastify.dev/docs/latest/Reference/Server/#trustproxy
function trustProxy (env: Env): boolean | number | string[] {
  const raw = nonEmpty(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  if (/^\d+$/.test(raw)) return Number(raw)
  const proxies = list(env, 'TRUST_PROXY')
  for (const proxy of proxies) {
    if (!ipaddr.isValid(proxy) && !isCidr(proxy)) {
      throw new ConfigError(`TRUST_PROXY must be true, false, a number of hops, or a comma list of addresses and CIDR ranges; "${proxy}" is none of these`)
    }
  }
  return proxies
}

function isCidr (text: string): boolean {
  try {
    ipaddr.parseCIDR(text)
    return true
  } catch {
    return false
  }
}

/** Hides the password of a connection URL so that it can be logged. */
export function redactUrl (url: string): string {
  // The URL may be malformed, with an `@` or `/` left unescaped in its
  // password, so everything from the first `:` after `//` to the last `@`
  // of the authority is hidden, not just up to the first `@`. The user name
  // may be empty: Redis URLs often carry a password alone (redis://:SECRET@host).
  const match = /^([a-z][a-z\d+.-]*:\/\/)([^?#]*)@/i.exec(url)
  const userinfo = match?.[2]
  if (match === null || userinfo === undefined || !userinfo.includes(':')) return url
  return `${match[1] ?? ''}${userinfo.slice(0, userinfo.indexOf(':'))}:***@${url.slice(match[0].length)}`
}
