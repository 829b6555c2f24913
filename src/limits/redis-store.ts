// The Redis store: the state every instance shares, so that limits and bans
// hold across all of them (docs/OPERATING.md: Rate limits in Redis). One Lua script
// decides and charges each request atomically, on Redis's clock (docs/INTERNALS.md,
// section "Redis store"). It fails fast when Redis is away; resilient-store.ts decides what then.
import { performance } from 'node:perf_hooks'
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import { within, type Waiting } from '../deadline.js'
import { DEFAULT_LEASE_MS, RedisSlots, SLOT_ROOM, SLOT_TAKE, defineSlotScripts, type WithSlotScripts } from './redis-slots.js'
import type { RedisTarget } from './redis-url.js'
import { WINDOW_MS } from '../domain.js'
import { NOTHING_HELD, windowStart, type Decision, type HeldDecision, type HitRequest, type RateLimitStore, type StoreHealth, type WindowState } from './store.js'

/** How much longer than its content a key is kept: an expiry only frees memory, so it errs late. */
const EXPIRY_MARGIN_MS = 1000

/** The script's first lines, which set `now`: Redis's clock, in Unix ms. */
const REDIS_CLOCK = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`

/**
 * The rule of rule.ts, in Lua, for the script to run after `now` is set.
 * KEYS: ban, refusals, one per window. ARGV: ban threshold (0: none), ban ms, minute ms,
 * charge (0: look only), then each window's ms and limit. Returns {now,
 * outcome (0 allowed, 1 limited, 2 banned), the end of the ban it is under or just earned
 * or 0, each window's count before}. Keys, expiries: docs/INTERNALS.md, section "Redis store".
 */
const HIT_RULE = `
local margin = ${EXPIRY_MARGIN_MS}
-- Lua numbers are doubles: written with %d, times and counts stay integers, never 1.7e+12.
local function int (n) return string.format('%d', n) end

local windows = {}
local full = false
local result = { now, 0, 0 }
for i = 3, #KEYS do
  local length = tonumber(ARGV[2 * i - 1])
  local limit = tonumber(ARGV[2 * i])
  local start = now - now % length
  local stored = redis.call('HMGET', KEYS[i], 'start', 'count')
  local used = 0
  if tonumber(stored[1]) == start then used = tonumber(stored[2]) end
  if used >= limit then full = true end
  windows[#windows + 1] = { key = KEYS[i], length = length, start = start, used = used }
  result[#result + 1] = used
end

local bannedUntil = tonumber(redis.call('GET', KEYS[1]) or '0')
if bannedUntil > now then
  result[2] = 2
  result[3] = bannedUntil
  return result
end

if ARGV[4] == '0' then
  if full then result[2] = 1 end
  return result
end

if full then
  result[2] = 1
  local threshold = tonumber(ARGV[1])
  if threshold > 0 then
    local minuteLength = tonumber(ARGV[3])
    local minute = now - now % minuteLength
    local stored = redis.call('HMGET', KEYS[2], 'start', 'count')
    local refusals = 1
    if tonumber(stored[1]) == minute then refusals = tonumber(stored[2]) + 1 end
    if refusals >= threshold then
      local banLength = tonumber(ARGV[2])
      redis.call('SET', KEYS[1], int(now + banLength), 'PX', int(banLength + margin))
      result[3] = now + banLength
      -- A new ban needs as many new refusals: one right after this ban ends does not renew it.
      refusals = 0
    end
    redis.call('HSET', KEYS[2], 'start', int(minute), 'count', int(refusals))
    redis.call('PEXPIRE', KEYS[2], int(minute + minuteLength - now + margin))
  end
  return result
end

for _, w in ipairs(windows) do
  redis.call('HSET', w.key, 'start', int(w.start), 'count', int(w.used + 1))
  redis.call('PEXPIRE', w.key, int(w.start + w.length - now + margin))
end
return result
`

/**
 * The hit script: `clock`, the Lua that sets `now`, then the rule. In service
 * the clock is Redis's TIME. The differential test against rule.ts
 * (test/limits/rule-vs-lua.test.ts) gives a clock of its own, which reads
 * `now` from one more ARGV after the rule's, so that it can play the rule at
 * instants it chooses while the rule it runs is the one served, unchanged
 * (docs/INTERNALS.md, section "The rule").
 */
export function hitScript (clock: string = REDIS_CLOCK): string {
  return clock + HIT_RULE
}

/** The hit script's answer when hitHolding found every slot taken: the rule's outcomes are 0 to 2. */
const SLOTS_FULL = 3

/**
 * The hit with a slot of requests in flight (redis-slots.ts) in the same
 * step, for RedisStore.hitHolding. KEYS and ARGV: the hit script's, then the
 * key's set of slots as the last KEY, and cap, lease ms and member as the
 * last three ARGV, taken off before the rule reads the rest. Every slot
 * taken: {now, SLOTS_FULL}, and nothing charged; otherwise the rule's answer,
 * with the slot taken only when it allows the request.
 */
const HIT_HOLDING_SCRIPT = `${REDIS_CLOCK}
local slots = table.remove(KEYS)
local member = table.remove(ARGV)
local lease = tonumber(table.remove(ARGV))
local cap = tonumber(table.remove(ARGV))
${SLOT_ROOM}
if not room then return { now, ${SLOTS_FULL} } end
local answer = (function ()
${HIT_RULE}
end)()
if answer[2] == 0 then
${SLOT_TAKE}
end
return answer
`

/** The script's KEYS and ARGV for `request` (HIT_RULE says their order), the subject's keys named from `prefix`. */
export function hitArguments (prefix: string, { windows, ban, charge = true }: HitRequest): { keys: string[], args: string[] } {
  return {
    keys: [`${prefix}ban`, `${prefix}refusals`, ...windows.map(({ window }) => prefix + window)],
    args: [
      String(ban?.threshold ?? 0),
      String((ban?.seconds ?? 0) * 1000),
      String(WINDOW_MS.minute),
      charge ? '1' : '0',
      ...windows.flatMap(({ window, limit }) => [String(WINDOW_MS[window]), String(limit)])
    ]
  }
}

/**
 * The decision in the script's `reply` to `request`. Its instants are on the
 * caller's clock, as the caller reads them against its own `now`
 * (Retry-After, X-RateLimit-Reset, the Date header): each is Redis's time
 * left, counted from `answeredAt`, when the answer arrived on the caller's
 * clock. So a Retry-After is never shorter than the real wait, however far
 * apart the two clocks are, and is longer by one round trip at most.
 */
export function decisionOf (reply: unknown, { windows, charge = true }: HitRequest, answeredAt: number): Decision {
  const [redisNow = 0, outcome, bannedUntil = 0, ...used] = integers(reply, 3 + windows.length)
  const shift = answeredAt - redisNow
  const states = (charge: number): WindowState[] => windows.map(({ window, limit }, i) => ({
    window,
    limit,
    remaining: Math.max(0, limit - (used[i] ?? 0) - charge),
    resetAt: windowStart(window, redisNow) + WINDOW_MS[window] + shift
  }))
  if (outcome === 2) return { outcome: 'banned', windows: states(0), bannedUntil: bannedUntil + shift }
  if (outcome === 1) {
    return bannedUntil === 0 ? { outcome: 'limited', windows: states(0) } : { outcome: 'limited', windows: states(0), banEarnedUntil: bannedUntil + shift }
  }
  return { outcome: 'allowed', windows: states(charge ? 1 : 0) }
}

/**
 * An instance stops waiting for Redis after 500 ms (docs/OPERATING.md: When
 * Redis is unreachable); a connection attempt, which no request waits for,
 * gets a second, so a server that accepts but never answers is given up.
 */
const COMMAND_TIMEOUT_MS = 500
const CONNECT_TIMEOUT_MS = 1000

/**
 * Reconnecting never stops, so the store returns to Redis whenever Redis is
 * back, but it backs off, doubling from 50 ms up to a bound of 1 s: a dead
 * server costs one refused connection a second, and one that is back is
 * found within a second.
 */
function reconnectDelay (attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt - 1, 5), 1000)
}

/** The script as a command: defineCommand adds it at run time, which ioredis's types cannot know. */
interface WithHitScript {
  petstoreHit (numberOfKeys: number, ...keysAndArgs: string[]): Promise<unknown>
  petstoreHitHolding (numberOfKeys: number, ...keysAndArgs: string[]): Promise<unknown>
}

export interface RedisStoreOptions {
  /**
   * Names this deployment's keys. Key ids are a database's own, so two
   * deployments sharing one Redis (production and staging, say) must not
   * share `key:1`: the service gives the id of its database here.
   */
  namespace?: string
  /** How long a slot of requests in flight outlives its instance's last word about it (redis-slots.ts); tests shorten it. */
  leaseMs?: number
  /**
   * How long a command may wait for Redis's answer (500 ms: the service's
   * ResilientStore answers in-process past it). Component tests, which use
   * this store without that fallback, lengthen it, so that a loaded test
   * machine is not taken for a Redis that does not answer.
   */
  commandTimeoutMs?: number
}

export class RedisStore implements RateLimitStore {
  readonly name = 'redis'
  readonly slots: RedisSlots
  readonly #client: (Redis | Cluster) & WithHitScript & WithSlotScripts
  readonly #namespace: string
  /** The client's last connection error, to say why Redis is unreachable. */
  #lastError: string | undefined

  constructor (target: RedisTarget, { namespace = '', leaseMs = DEFAULT_LEASE_MS, commandTimeoutMs = COMMAND_TIMEOUT_MS }: RedisStoreOptions = {}) {
    this.#namespace = namespace === '' ? '' : `${namespace}:`
    // No offline queue: a command sent while Redis is away fails at once
    // instead of waiting for a reconnection. Nothing is resent after one
    // either: by then its request was answered without Redis.
    const options: RedisOptions = {
      commandTimeout: commandTimeoutMs,
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false
    }
    const client = target.kind === 'single'
      ? new Redis(target.url, { ...options, enableOfflineQueue: false, retryStrategy: reconnectDelay })
      : new Cluster(target.nodes, {
        enableOfflineQueue: false,
        clusterRetryStrategy: reconnectDelay,
        slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
        redisOptions: {
          ...options,
          username: target.username,
          password: target.password,
          ...(target.tls ? { tls: {} } : {})
        }
      } satisfies ClusterOptions)
    client.on('error', (error: Error) => { this.#lastError = error.message })
    client.on('ready', () => { this.#lastError = undefined })
    // EVALSHA, with EVAL the first time a server has not seen the script (a new or restarted one).
    client.defineCommand('petstoreHit', { lua: hitScript() })
    client.defineCommand('petstoreHitHolding', { lua: HIT_HOLDING_SCRIPT })
    defineSlotScripts(client)
    // Cast: the lines above added the scripts.
    this.#client = client as typeof client & WithHitScript & WithSlotScripts
    this.slots = new RedisSlots(this.#client, `petstore:${this.#namespace}`, leaseMs)
  }

  async hit (request: HitRequest, now: number): Promise<Decision> {
    this.#assertReady()
    const { keys, args } = this.#hitArguments(request)
    const sent = performance.now()
    const reply = await this.#client.petstoreHit(keys.length, ...keys, ...args)
    return decisionOf(reply, request, now + Math.ceil(performance.now() - sent))
  }

  /** One script, one round trip: a request that finds a slot free sends one command before its answer, not two. */
  readonly hitHolding = async (request: HitRequest, now: number, cap: number, waiting?: Waiting): Promise<HeldDecision | undefined> => {
    this.#assertReady()
    const { keys, args } = this.#hitArguments(request)
    const slot = this.slots.lease(request.subject)
    const sent = performance.now()
    const reply = await this.#client.petstoreHitHolding(keys.length + 1, ...keys, slot.key, ...args, String(cap), String(slot.leaseMs), slot.member)
    if (Array.isArray(reply) && reply[1] === SLOTS_FULL) return undefined
    const decision = decisionOf(reply, request, now + Math.ceil(performance.now() - sent))
    return { decision, release: decision.outcome === 'allowed' ? this.slots.taken(request.subject, slot.member, sent, waiting) : NOTHING_HELD }
  }

  /** The slots' keys (redis-slots.ts) share this prefix and hash tag: one cluster node holds a subject's every key. */
  #hitArguments (request: HitRequest): { keys: string[], args: string[] } {
    return hitArguments(`petstore:${this.#namespace}{${request.subject}}:`, request)
  }

  /** One PING (to every master of a cluster), answered within COMMAND_TIMEOUT_MS or failed. */
  async health (): Promise<StoreHealth> {
    try {
      this.#assertReady()
      const client = this.#client
      const servers = client instanceof Cluster ? client.nodes('master') : [client]
      if (servers.length === 0) throw new Error('the cluster names no master')
      await Promise.all(servers.map(async (server) => await server.ping()))
      return { status: 'ok' }
    } catch (error) {
      return { status: 'down', reason: `redis unreachable (${error instanceof Error ? error.message : String(error)})` }
    }
  }

  /** Whether the client is connected and ready within `ms`: at start, so that a store is not called degraded while it connects. */
  async whenReady (ms: number): Promise<boolean> {
    const client = this.#client
    if (client.status === 'ready') return true
    // Not events.once(): it would give up at the first 'error', and the client goes on trying until `ms` have passed.
    let ready: (() => void) | undefined
    try {
      await within(ms, async () => { await new Promise<void>((resolve) => { ready = resolve; client.once('ready', resolve) }) })
      return true
    } catch {
      return false
    } finally {
      // Gone already if it came; if not, nobody waits for it any more.
      if (ready !== undefined) client.off('ready', ready)
    }
  }

  async close (): Promise<void> {
    this.slots.close()
    try {
      await this.#client.quit()
    } catch {
      // Redis is away or not answering: there is nothing to say goodbye to.
      this.#client.disconnect()
    }
  }

  /** Fails at once, and says why, while the client is not connected: ioredis's own message names neither the cause nor the server. */
  #assertReady (): void {
    const status = this.#client.status
    if (status !== 'ready') throw new Error(`${status}${this.#lastError === undefined ? '' : `: ${this.#lastError}`}`)
  }
}

/** The script's reply, checked: an array of at least `length` integers. */
function integers (reply: unknown, length: number): number[] {
  const unexpected = (): Error => new Error(`unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`)
  if (!Array.isArray(reply) || reply.length < length) throw unexpected()
  return reply.map((n: unknown) => {
    if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw unexpected()
    return n
  })
}
