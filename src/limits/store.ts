// The rate-limit contract. A store decides and charges in one atomic step;
// the in-process store and the Redis store implement it alike, and one test
// suite runs against each. Nothing here knows about HTTP.

import type { Waiting } from '../deadline.js'
import { WINDOW_MS, type WindowName } from '../domain.js'

export interface WindowLimit {
  window: WindowName
  limit: number
}

export interface BanPolicy {
  /** Refused requests inside one UTC minute that earn a ban. */
  threshold: number
  /** How long a ban lasts, from the refusal that earned it. */
  seconds: number
}

export interface HitRequest {
  /** Who is limited: `key:ID` or `addr:ADDRESS`. */
  subject: string
  windows: readonly WindowLimit[]
  ban: BanPolicy | undefined
  /**
   * False: only look. The decision says where the subject stands (banned,
   * a window full, or room left, with each window's remaining as it is),
   * and nothing is written: no unit, no refusal towards a ban.
   */
  charge?: boolean
}

export interface WindowState {
  window: WindowName
  limit: number
  /** Requests left in this window after this one. */
  remaining: number
  /** Unix milliseconds at which this window resets. */
  resetAt: number
}

export type Decision =
  | { outcome: 'allowed', windows: WindowState[] }
  /** `banEarnedUntil`: this refusal reached the ban threshold, and the ban it earned lasts until then. */
  | { outcome: 'limited', windows: WindowState[], banEarnedUntil?: number }
  | { outcome: 'banned', windows: WindowState[], bannedUntil: number }

/**
 * `degraded`: still deciding every request, but not as designed (Redis away,
 * limiting in-process), so the instance keeps its traffic while someone looks.
 * `down`: it cannot decide, so the instance should get none. `reason`: a short
 * phrase for people, e.g. "redis unreachable, limiting in-process".
 */
export type StoreHealth =
  | { status: 'ok' }
  | { status: 'degraded', reason: string }
  | { status: 'down', reason: string }

/** Gives a slot of requests in flight back: once; later calls do nothing. */
export type Release = () => void

/** The release of a slot never taken. */
export const NOTHING_HELD: Release = () => {}

/**
 * A key's slots of requests in flight, counted where every instance sees
 * them (docs/INTERNALS.md, section "Requests in flight"). Only a shared
 * store has them: without one, the process's own table decides alone.
 */
export interface SharedSlots {
  /**
   * One of `subject`'s `cap` slots: its release, or undefined when all are
   * taken. Rejects when the store cannot answer. `waiting.stopped`: true once
   * the caller stops waiting, so that a slot taken after that is given back.
   */
  take (subject: string, cap: number, waiting?: Waiting): Promise<Release | undefined>
  /**
   * A slot the store was not asked for, because it could not answer and the
   * process's own table decided: counted in the store once it is back, so that
   * the requests in flight then are not forgotten.
   */
  hold (subject: string): Release
}

/** A request's decision, made in one step with a slot of its key's requests in flight (RateLimitStore `hitHolding`). */
export interface HeldDecision {
  decision: Decision
  /** The slot's release; a refused request took none, and its release does nothing. */
  release: Release
}

export interface RateLimitStore {
  readonly name: string
  /** The requests in flight every instance shares; none in a store of one process. */
  readonly slots?: SharedSlots
  /** Checks every window and, only when all have room (and the request charges), charges one unit to each. */
  hit (request: HitRequest, now: number): Promise<Decision>
  /**
   * One of `slots`' `cap` slots of the request's subject and its hit, in one
   * step: one round trip to a shared store where `take` then `hit` are two
   * (docs/INTERNALS.md, section "Requests in flight"). Undefined when every
   * slot is taken, and then nothing is charged; a request the hit refuses
   * takes no slot. Only a store with `slots` has it. `waiting.stopped`: as `take`'s.
   */
  readonly hitHolding?: (request: HitRequest, now: number, cap: number, waiting?: Waiting) => Promise<HeldDecision | undefined>
  /**
   * Answers from what the store already knows, or after one short probe:
   * readiness is polled often, and the caller gives up after a few seconds
   * and counts that as down, as it does a rejection.
   */
  health (): Promise<StoreHealth>
  close (): Promise<void>
}

/** Start of the fixed UTC window that contains `now`. Unix time has no leap seconds, so days align to UTC midnight. */
export function windowStart (window: WindowName, now: number): number {
  return now - (now % WINDOW_MS[window])
}
