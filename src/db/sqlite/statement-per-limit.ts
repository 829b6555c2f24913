import { MAX_PAGE_SIZE } from '../../domain.js'

/** The largest page read: the largest `limit`, and one more to tell whether another page follows. */
const MAX_LIMIT = MAX_PAGE_SIZE + 1

/**
 * One prepared statement per size (a page's, or a group commit's rows), written
 * into its SQL: SQLite prepares a `LIMIT ?` again on every run, which cost a page
 * half as much again (docs/INTERNALS.md, section "SQLite"). Sizes are 1 to `max`, validated before.
 */
export class StatementPerLimit<S> {
  readonly #made: Array<S | undefined> = []
  readonly #prepare: (limit: number) => S
  readonly #max: number

  constructor (prepare: (limit: number) => S, max = MAX_LIMIT) {
    this.#prepare = prepare
    this.#max = max
  }

  for (limit: number): S {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > this.#max) throw new RangeError(`a statement for ${limit} rows`)
    let statement = this.#made[limit]
    if (statement === undefined) {
      statement = this.#prepare(limit)
      this.#made[limit] = statement
    }
    return statement
  }
}
