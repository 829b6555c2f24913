// A shared store (Redis) with an in-process fallback (docs/OPERATING.md: When Redis
// is unreachable): past a failure or 500 ms without an answer, the instance limits on
// its own, reports itself degraded, and leaves the shared store to a background probe
// until it answers, so that a frozen Redis does not cost every request the full wait.
// Its slots of requests in flight go the same way, on the same state: while it is
// degraded the process's own table decides alone (limits/in-flight.ts). With
// workers, the state is the instance's, shared by all (degradation.ts).
import { within, type Waiting } from '../deadline.js'
import { Degradation } from './degradation.js'
import type { Decision, HeldDecision, HitRequest, RateLimitStore, Release, SharedSlots, StoreHealth } from './store.js'

/** What this store logs with: pino's logger is one, and so is anything with these two methods. */
export interface StoreLogger {
  warn (details: Record<string, unknown>, message: string): void
  info (details: Record<string, unknown>, message: string): void
}

/**
 * How long a request waits for the shared store before the fallback answers
 * it: a store that does not answer within 500 ms counts as unreachable, and
 * no request may wait on it for more than a second.
 */
const DEADLINE_MS = 500
/** How often a degraded store asks the shared one whether it is back: with DEADLINE_MS per probe, it is found within a second. */
const PROBE_EVERY_MS = 500

export class ResilientStore implements RateLimitStore {
  readonly name: string
  readonly slots: SharedSlots | undefined
  readonly hitHolding: RateLimitStore['hitHolding']
  readonly #primary: RateLimitStore
  readonly #fallback: RateLimitStore
  readonly #logger: StoreLogger
  /** Whether the instance uses the shared store: this thread's, or every worker's. */
  readonly #state: Degradation
  /** Why this thread last found the shared store away; another worker may have found it first. */
  #reason: string | undefined
  /** This thread's probe, while the instance is degraded: whichever worker finds the store back restores them all. */
  #probe: NodeJS.Timeout | undefined
  #closed = false

  /**
   * Opens it after one health check of `primary`, so that a shared store
   * unreachable at start is said so at once. The fallback is in-process: it
   * cannot be unreachable, so a degraded store always has something to limit
   * with, and is never down.
   */
  static async open (primary: RateLimitStore, fallback: RateLimitStore, logger: StoreLogger, state = new Degradation()): Promise<ResilientStore> {
    const store = new ResilientStore(primary, fallback, logger, state)
    const health = await store.#primaryHealth()
    if (health.status !== 'ok') store.#degrade(health.reason)
    else if (state.degraded) store.#ensureProbe()
    return store
  }

  private constructor (primary: RateLimitStore, fallback: RateLimitStore, logger: StoreLogger, state: Degradation) {
    this.name = primary.name
    this.#primary = primary
    this.#fallback = fallback
    this.#logger = logger
    this.#state = state
    const shared = primary.slots
    this.slots = shared === undefined
      ? undefined
      : { take: async (subject, cap) => await this.#take(shared, subject, cap), hold: (subject) => shared.hold(subject) }
    const holding = primary.hitHolding
    this.hitHolding = shared === undefined || holding === undefined
      ? undefined
      : async (request, now, cap) => await this.#hitHolding(holding, shared, request, now, cap)
  }

  async hit (request: HitRequest, now: number): Promise<Decision> {
    return await this.#primaryOr(async () => await this.#primary.hit(request, now), async () => await this.#fallback.hit(request, now))
  }

  /** As `hit` and `#take` in one: without the shared store, the fallback's decision and a slot held, as the two would give. */
  async #hitHolding (holding: NonNullable<RateLimitStore['hitHolding']>, shared: SharedSlots, request: HitRequest, now: number, cap: number): Promise<HeldDecision | undefined> {
    return await this.#primaryOr(async (waiting) => await holding(request, now, cap, waiting),
      async () => ({ decision: await this.#fallback.hit(request, now), release: shared.hold(request.subject) }))
  }

  /**
   * The shared store's answer, or, when it cannot give one in time, a slot
   * held without it: the caller has one from the process's own table already.
   */
  async #take (shared: SharedSlots, subject: string, cap: number): Promise<Release | undefined> {
    return await this.#primaryOr(async (waiting) => await shared.take(subject, cap, waiting), async () => shared.hold(subject))
  }

  /** `primary`'s answer within DEADLINE_MS while the shared store is used; else, or when it fails or is late, the store degrades and `fallback` answers. */
  async #primaryOr<T> (primary: (waiting: Waiting) => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    if (!this.#state.degraded) {
      try {
        return await within(DEADLINE_MS, primary)
      } catch (error) {
        this.#degrade(`${this.#primary.name} unreachable (${message(error)})`)
      }
    } else this.#ensureProbe()
    return await fallback()
  }

  /** While the shared store is used, one probe of it, so that readiness names a store that went away while no request came. */
  async health (): Promise<StoreHealth> {
    if (!this.#state.degraded) {
      this.#reason = undefined
      const health = await this.#primaryHealth()
      if (health.status !== 'ok') this.#degrade(health.reason)
    } else this.#ensureProbe()
    if (!this.#state.degraded) return { status: 'ok' }
    return { status: 'degraded', reason: `${this.#reason ?? `${this.#primary.name} unreachable (found by another worker)`}, limiting in-process` }
  }

  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#probe)
    await Promise.all([this.#primary.close(), this.#fallback.close()])
  }

  async #primaryHealth (): Promise<StoreHealth> {
    try {
      return await within(DEADLINE_MS, async () => await this.#primary.health())
    } catch (error) {
      return { status: 'down', reason: `${this.#primary.name} unreachable (${message(error)})` }
    }
  }

  /** Degrades the instance; the thread that changed its state logs it, once for all. */
  #degrade (reason: string): void {
    if (this.#closed) return
    this.#reason = reason
    if (this.#state.degrade(Date.now())) {
      this.#logger.warn({ store: this.name, reason }, `rate-limit store ${this.name} unreachable: limiting in-process, per instance${this.slots === undefined ? '' : ' (rate limits and requests in flight)'}, until it answers again`)
    }
    this.#ensureProbe()
  }

  /** Every thread of a degraded instance probes: a worker that degraded it may since have been replaced. */
  #ensureProbe (): void {
    if (this.#probe !== undefined || this.#closed) return
    // #probeOnce never rejects: #primaryHealth turns every failure into an answer.
    this.#probe = setTimeout(() => { this.#probeOnce().catch(() => {}) }, PROBE_EVERY_MS)
    // The probe alone does not keep the process alive: close() or exit ends it.
    this.#probe.unref()
  }

  async #probeOnce (): Promise<void> {
    const health = await this.#primaryHealth()
    this.#probe = undefined
    if (this.#closed || !this.#state.degraded) return
    if (health.status !== 'ok') {
      this.#ensureProbe()
      return
    }
    const degradedForMs = this.#state.restore(Date.now())
    this.#reason = undefined
    if (degradedForMs !== undefined) this.#logger.info({ store: this.name, degradedForMs }, `rate-limit store ${this.name} reachable again: limits are shared again`)
  }
}

function message (error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
