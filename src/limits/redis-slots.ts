// Requests in flight per key, counted in Redis so that a key's cap holds
// across every instance (docs/INTERNALS.md, section "Requests in flight").
// Each request in flight is a lease: a member of its key's sorted set, scored
// by the lease's end on Redis's clock. An instance that dies stops renewing
// its leases, so its slots are free again within one lease, while a live
// instance renews the leases of its long requests and gives each back when
// its request ends.
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { Cluster, Redis } from 'ioredis'
import type { Waiting } from '../deadline.js'
import type { Release, SharedSlots } from './store.js'

/** How long a slot outlives its instance's last word about it (docs/SCALING.md: Requests in flight across instances). */
export const DEFAULT_LEASE_MS = 10_000
/** Renewals per lease: a lease is renewed once it is a fifth old, so four renewals in a row can fail before it ends. */
const RENEWALS_PER_LEASE = 5
/** As the windows' keys (redis-store.ts): the set's expiry only frees memory, so it errs late. */
const EXPIRY_MARGIN_MS = 1000

/**
 * Lua, once `now` is set (Redis's clock, Unix ms) and `slots` names a key's
 * set: drops the leases that have ended; `room` is whether fewer than `cap`
 * are left.
 */
export const SLOT_ROOM = `
redis.call('ZREMRANGEBYSCORE', slots, '-inf', string.format('%d', now))
local room = redis.call('ZCARD', slots) < cap`

/** Lua, after SLOT_ROOM: takes a slot, `member`, until a lease of `lease` ms from now. */
export const SLOT_TAKE = `
redis.call('ZADD', slots, string.format('%d', now + lease), member)
redis.call('PEXPIRE', slots, string.format('%d', lease + ${EXPIRY_MARGIN_MS}))`

/**
 * KEYS: the key's set. ARGV: cap, lease ms, member. Adds the member only
 * when fewer than the cap are left. Returns 1 when it took a slot, else 0.
 */
const TAKE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local slots, cap, lease, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
${SLOT_ROOM}
if not room then return 0 end
${SLOT_TAKE}
return 1
`

/**
 * KEYS: the key's set. ARGV: lease ms, then members. Every member's lease
 * ends a lease from now, whether it was there or not: a member missing (Redis
 * restarted, or the slot was held while Redis was away) is a request still in
 * flight, and counts again.
 */
const RENEW_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease = tonumber(ARGV[1])
local ends = string.format('%d', now + lease)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], ends, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], string.format('%d', lease + ${EXPIRY_MARGIN_MS}))
return #ARGV - 1
`

/** The scripts as commands: defineCommand adds them at run time, which ioredis's types cannot know. */
export interface WithSlotScripts {
  petstoreTake (numberOfKeys: number, ...keysAndArgs: string[]): Promise<unknown>
  petstoreRenew (numberOfKeys: number, ...keysAndArgs: string[]): Promise<unknown>
}

/** Adds the scripts to a client, before RedisSlots is made on it. */
export function defineSlotScripts (client: Redis | Cluster): void {
  client.defineCommand('petstoreTake', { lua: TAKE_SCRIPT })
  client.defineCommand('petstoreRenew', { lua: RENEW_SCRIPT })
}

interface Held {
  subject: string
  /** When its lease was last written in Redis (performance.now()); -Infinity while it has never been. */
  written: number
  /** Whether any command named it, answered or not: only then may Redis have it to give back. */
  sent: boolean
}

export class RedisSlots implements SharedSlots {
  readonly #client: (Redis | Cluster) & WithSlotScripts
  readonly #keyPrefix: string
  readonly #leaseMs: number
  readonly #renewEveryMs: number
  /** Names this store's leases among every instance's; a member is HOLDER:N. */
  readonly #holder = randomBytes(9).toString('base64url')
  #taken = 0
  /** Every slot this store holds now, by member: what renewals write. */
  readonly #held = new Map<string, Held>()
  readonly #renewal: NodeJS.Timeout

  /** `keyPrefix`: the store's, to which `{SUBJECT}:inflight` is added. */
  constructor (client: (Redis | Cluster) & WithSlotScripts, keyPrefix: string, leaseMs: number = DEFAULT_LEASE_MS) {
    if (!Number.isSafeInteger(leaseMs) || leaseMs < RENEWALS_PER_LEASE) throw new RangeError(`leaseMs must be an integer of at least ${RENEWALS_PER_LEASE}, not ${leaseMs}`)
    this.#client = client
    this.#keyPrefix = keyPrefix
    this.#leaseMs = leaseMs
    this.#renewEveryMs = leaseMs / RENEWALS_PER_LEASE
    // #renew never rejects. Renewals alone do not keep the process alive: close() or exit ends them.
    this.#renewal = setInterval(() => { this.#renew().catch(() => {}) }, this.#renewEveryMs).unref()
  }

  /**
   * `waiting.stopped`: true once the caller stopped waiting; a slot Redis gives
   * after that is given back at once, since no request will.
   */
  async take (subject: string, cap: number, waiting?: Waiting): Promise<Release | undefined> {
    const { key, member, leaseMs } = this.lease(subject)
    const sent = performance.now()
    const reply = await this.#client.petstoreTake(1, key, String(cap), String(leaseMs), member)
    if (reply !== 0 && reply !== 1) throw new Error(`unexpected reply from the slot script: ${JSON.stringify(reply)}`)
    if (reply === 0) return undefined
    return this.taken(subject, member, sent, waiting)
  }

  /** A slot of `subject`'s to ask for, in `take` or in a command of another script (SLOT_TAKE): its set's key, a member of its own, the lease. */
  lease (subject: string): { key: string, member: string, leaseMs: number } {
    return { key: this.#key(subject), member: this.#member(), leaseMs: this.#leaseMs }
  }

  /** The slot `lease` named, once Redis has given it (the command was sent at `sent`, performance.now()): renewed and given back as this store's own. */
  taken (subject: string, member: string, sent: number, waiting?: Waiting): Release {
    const release = this.#keep({ subject, written: sent, sent: true }, member)
    if (waiting?.stopped === true) release()
    return release
  }

  hold (subject: string): Release {
    return this.#keep({ subject, written: -Infinity, sent: false }, this.#member())
  }

  /** Stops renewing. The slots still held are left to their leases: a store closes after its requests have ended. */
  close (): void {
    clearInterval(this.#renewal)
  }

  #member (): string {
    return `${this.#holder}:${(this.#taken++).toString(36)}`
  }

  #key (subject: string): string {
    return `${this.#keyPrefix}{${subject}}:inflight`
  }

  #keep (held: Held, member: string): Release {
    this.#held.set(member, held)
    let kept = true
    return () => {
      if (!kept) return
      kept = false
      this.#held.delete(member)
      // A slot held while Redis was away, and never written since, has nothing
      // there to give back: a dead or frozen Redis is not sent a command per request.
      if (!held.sent) return
      // One connection answers in order, so this comes after any renewal that
      // named the member. If it fails, nothing renews the lease any more: it ends there.
      this.#client.zrem(this.#key(held.subject), member).catch(() => {})
    }
  }

  /** Writes the leases of the slots held for a fifth of a lease or more, or never written; fresh ones wait, as most requests end sooner. */
  async #renew (): Promise<void> {
    const due = performance.now() - this.#renewEveryMs
    const bySubject = new Map<string, string[]>()
    if (this.#client.status !== 'ready') return
    for (const [member, held] of this.#held) {
      if (held.written > due) continue
      held.sent = true
      const members = bySubject.get(held.subject)
      if (members === undefined) bySubject.set(held.subject, [member])
      else members.push(member)
    }
    if (bySubject.size === 0) return
    const sent = performance.now()
    await Promise.all([...bySubject].map(async ([subject, members]) => {
      try {
        await this.#client.petstoreRenew(1, this.#key(subject), String(this.#leaseMs), ...members)
        for (const member of members) {
          const held = this.#held.get(member)
          if (held !== undefined) held.written = sent
        }
      } catch {
        // Tried again at the next renewal; the lease has four left before it ends.
      }
    }))
  }
}
