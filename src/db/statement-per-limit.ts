import { MAX_PAGE_SIZE } from '../schemas/pet.js'

/** The largest page read: the largest `limit`, and one more to tell whether another page follows. */
const MAX_LIMIT = MAX_PAGE_SIZE + 1

/**
 * One prepared statement per page size, the size written into its SQL.
 * With `LIMIT ?`, SQLite prepares the statement again on every run, since
 * the planner takes a bound LIMIT into account: that doubled the cost of a
 * page. Sizes are whole numbers from 1 to `max` (validated before they get
 * here), so at most that many statements are ever made. A group commit's
 * INSERT takes one per number of rows, likewise.
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
