// A commit blocks the event loop for one fsync (better-sqlite3 is synchronous),
// so inserts that arrive together share one transaction on the next turn of the
// loop, each answered only after it. A refused insert fails alone; a group that
// meets another's lock retries off the event loop, failing past the busy budget (503).
import { StorageUnavailableError } from '../../errors.js'
import { classifySqliteError, isBusy, isUnavailable } from './errors.js'
import type { CreateOnceResult, IdempotencyRecord, NewPetRecord } from '../storage.js'
import type { WriteTurn } from './write-turns.js'

/** How often a group blocked by another connection's write lock tries again. */
export const BUSY_RETRY_MS = 20

export interface PendingInsert {
  pet: NewPetRecord
  idempotency: IdempotencyRecord | undefined
  /** When the insert was queued: past the busy budget it fails with 503. */
  queuedAt: number
  resolve: (result: CreateOnceResult) => void
  reject: (error: unknown) => void
}

/** One insert's share of a group commit: committed with the group, or refused alone. */
export type InsertOutcome = { ok: true, result: CreateOnceResult } | { ok: false, error: unknown }

/** Thrown out of a group commit when one insert's error made SQLite roll back the whole transaction. */
export class GroupRolledBack extends Error {
  constructor (readonly index: number, cause: unknown) {
    super('SQLite rolled back the group commit', { cause })
  }
}

export interface GroupCommitOptions {
  /** The group in one transaction, no savepoints: the usual case, and the cheapest. */
  commitAll: (group: PendingInsert[]) => InsertOutcome[]
  /** The group in one transaction, each insert in a savepoint of its own; throws GroupRolledBack when SQLite undid the lot. */
  commitEach: (group: PendingInsert[]) => InsertOutcome[]
  busyBudgetMs: number
  /** Shared with the other workers of this process: their group commits take turns (write-turns.ts). */
  turn?: WriteTurn | undefined
  /** Told after each commit tried: undefined once written, the error when the database could not be. */
  written: (failure: StorageUnavailableError | undefined) => void
}

export class GroupCommit {
  readonly #options: GroupCommitOptions
  #pending: PendingInsert[] = []
  #scheduled = false
  #closed = false

  constructor (options: GroupCommitOptions) {
    this.#options = options
  }

  add (pet: NewPetRecord, idempotency: IdempotencyRecord | undefined): Promise<CreateOnceResult> {
    if (this.#closed) return Promise.reject(new StorageUnavailableError('the database is closed'))
    return new Promise((resolve, reject) => {
      this.#pending.push({ pet, idempotency, queuedAt: Date.now(), resolve, reject })
      this.#schedule(0)
    })
  }

  /** Commits what is queued, and refuses what comes after. */
  close (): void {
    this.#closed = true
    this.#flush()
    for (const insert of this.#pending) insert.reject(new StorageUnavailableError('the database is closed'))
    this.#pending = []
  }

  #schedule (delayMs: number): void {
    if (this.#scheduled) return
    this.#scheduled = true
    const turn = this.#options.turn
    const flush = turn === undefined
      ? () => { this.#flush() }
      // Inserts queued while waiting for the turn join this group.
      : () => {
          turn.take().then(() => {
            try { this.#flush() } finally { turn.give() }
          }, (error: unknown) => { this.#fail(this.#pending.splice(0), error) })
        }
    if (delayMs === 0) setImmediate(flush)
    else setTimeout(flush, delayMs)
  }

  /** Commits every queued insert in one transaction: one fsync for the lot. */
  #flush (): void {
    this.#scheduled = false
    const group = this.#pending
    this.#pending = []
    if (group.length === 0) return
    let outcomes: InsertOutcome[]
    try {
      outcomes = this.#commit(group)
    } catch (error) {
      if (error instanceof GroupRolledBack) {
        // Only the insert that caused it fails; the others go again, first.
        for (const refused of group.splice(error.index, 1)) refused.reject(error.cause)
        this.#pending = group.concat(this.#pending)
        if (this.#pending.length > 0) this.#schedule(0)
        return
      }
      if (isBusy(error) && !this.#closed) {
        const overdue = Date.now() - this.#options.busyBudgetMs
        this.#fail(group.filter((insert) => insert.queuedAt <= overdue), error)
        this.#pending = group.filter((insert) => insert.queuedAt > overdue).concat(this.#pending)
        if (this.#pending.length > 0) this.#schedule(BUSY_RETRY_MS)
        return
      }
      this.#fail(group, error)
      return
    }
    this.#options.written(undefined)
    group.forEach((insert, i) => {
      const outcome = outcomes[i] as InsertOutcome
      if (outcome.ok) insert.resolve(outcome.result)
      else insert.reject(outcome.error)
    })
  }

  /** The group in one transaction; when an insert fails, again with each insert in a savepoint, so that it fails alone. */
  #commit (group: PendingInsert[]): InsertOutcome[] {
    try {
      return this.#options.commitAll(group)
    } catch (error) {
      // Nothing was committed. A database that cannot be written fails the
      // savepoints' way too: #flush fails or retries the group as it is.
      if (isUnavailable(error) || this.#closed) throw error
      return this.#options.commitEach(group)
    }
  }

  #fail (group: PendingInsert[], error: unknown): void {
    if (group.length === 0) return
    const failure = classifySqliteError(error)
    if (failure instanceof StorageUnavailableError) this.#options.written(failure)
    for (const insert of group) insert.reject(failure)
  }
}
