// The rate-limit and ban rule, once: what one hit decides and writes, from a
// subject's state and the time. Both in-process stores keep their state in
// this form and call decide(); the Redis store's Lua script is the rule's one
// other copy, held to it by test/limits/rule-vs-lua.test.ts (docs/INTERNALS.md,
// section "The rule").
import { WINDOW_MS, type WindowName } from '../domain.js'
import { windowStart, type Decision, type HitRequest, type WindowState } from './store.js'

/**
 * A subject's state: RULE_FIELDS numbers from an offset in a Float64Array
 * (Unix milliseconds are beyond 32 bits), so that the shared-memory store
 * decides in place in its shared table and the in-process store keeps one
 * small array a subject. All zero: a subject never seen.
 */
const F_MINUTE_START = 0
const F_DAY_START = 2
// Each window's count follows its start.
const F_REFUSALS_START = 4
const F_REFUSALS_COUNT = 5
export const F_BANNED_UNTIL = 6
export const RULE_FIELDS = 7

const WINDOW_FIELD: Record<WindowName, number> = { minute: F_MINUTE_START, day: F_DAY_START }

/**
 * Decides one hit at `now` and, when it charges, writes what it changes in
 * `state` from `f`: the windows' counts when admitted, the refusals and the
 * ban when refused. A look (`charge: false`) writes nothing, so any all-zero
 * array stands for a subject not kept.
 */
export function decide (state: Float64Array, f: number, request: HitRequest, now: number): Decision {
  const { windows, ban } = request
  const bannedUntil = at(state, f + F_BANNED_UNTIL)
  if (bannedUntil > now) return { outcome: 'banned', windows: windowStates(state, f, windows, now), bannedUntil }

  let full = false
  for (const { window, limit } of windows) {
    if (used(state, f + WINDOW_FIELD[window], window, now) >= limit) full = true
  }
  if (request.charge === false) {
    return full ? { outcome: 'limited', windows: windowStates(state, f, windows, now) } : { outcome: 'allowed', windows: windowStates(state, f, windows, now) }
  }

  if (!full) {
    // Both windows or neither: the contract in store.ts.
    for (const { window } of windows) {
      const field = f + WINDOW_FIELD[window]
      state[field + 1] = used(state, field, window, now) + 1
      state[field] = windowStart(window, now)
    }
    return { outcome: 'allowed', windows: windowStates(state, f, windows, now) }
  }
  if (ban === undefined) return { outcome: 'limited', windows: windowStates(state, f, windows, now) }

  const minute = windowStart('minute', now)
  const refusals = at(state, f + F_REFUSALS_START) === minute ? at(state, f + F_REFUSALS_COUNT) + 1 : 1
  state[f + F_REFUSALS_START] = minute
  if (refusals < ban.threshold) {
    state[f + F_REFUSALS_COUNT] = refusals
    return { outcome: 'limited', windows: windowStates(state, f, windows, now) }
  }
  const banEarnedUntil = now + ban.seconds * 1000
  state[f + F_BANNED_UNTIL] = banEarnedUntil
  // A new ban needs as many new refusals: one right after this ban ends does not renew it.
  state[f + F_REFUSALS_COUNT] = 0
  return { outcome: 'limited', windows: windowStates(state, f, windows, now), banEarnedUntil }
}

/**
 * Until when the subject counts, from `now`: its last window's, its
 * refusals' minute's or its ban's end, and at least 1 ms later, so that a
 * store that keeps it for that long sees a hit in the same millisecond.
 * From then on its state decides as an all-zero one would.
 */
export function countsUntil (state: Float64Array, f: number, now: number): number {
  let end = at(state, f + F_BANNED_UNTIL)
  if (at(state, f + F_REFUSALS_COUNT) > 0) end = Math.max(end, at(state, f + F_REFUSALS_START) + WINDOW_MS.minute)
  if (at(state, f + F_MINUTE_START + 1) > 0) end = Math.max(end, at(state, f + F_MINUTE_START) + WINDOW_MS.minute)
  if (at(state, f + F_DAY_START + 1) > 0) end = Math.max(end, at(state, f + F_DAY_START) + WINDOW_MS.day)
  return Math.max(now + 1, end)
}

/** A window's count at `now`: its stored count while its stored start is this window's, else none. */
function used (state: Float64Array, field: number, window: WindowName, now: number): number {
  return at(state, field) === windowStart(window, now) ? at(state, field + 1) : 0
}

/** Each window as the state leaves it: the decision's view, read after the writes. */
function windowStates (state: Float64Array, f: number, windows: HitRequest['windows'], now: number): WindowState[] {
  const states: WindowState[] = []
  for (const { window, limit } of windows) {
    const remaining = Math.max(0, limit - used(state, f + WINDOW_FIELD[window], window, now))
    states.push({ window, limit, remaining, resetAt: windowStart(window, now) + WINDOW_MS[window] })
  }
  return states
}

/** An element at an index known to be inside the array. */
function at (state: Float64Array, index: number): number {
  return state[index] as number
}
