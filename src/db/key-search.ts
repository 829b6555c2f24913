// The SQL both backends run for the operator console's views of many keys:
// a filtered, sorted page of keys, and the counts by state and plan. One
// text for both, so that SQLite and PostgreSQL match the same keys in the
// same order; `param(n)` writes the n-th placeholder (`?` or `$n`).
import type { KeySearch } from './storage.js'

/** A key's state at `now` ($now), as SQL: the same rule as the gate's (revoked, else expired from expiresAt on). */
export function stateSql (now: string): string {
  return `CASE WHEN revoked_at IS NOT NULL THEN 'revoked' WHEN expires_at IS NOT NULL AND expires_at <= ${now} THEN 'expired' ELSE 'active' END`
}

/**
 * Never-used keys sort after every used one: last use is a positive
 * instant, so -1 stands for "never" in one descending key that a cursor
 * can follow.
 */
const LAST_USED = 'coalesce(last_used_at, -1)'

/** The WHERE, ORDER BY and LIMIT of a page of keys, after `SELECT … FROM api_keys`. */
export function keySearchSql (search: KeySearch, param: (n: number) => string): { sql: string, values: unknown[] } {
  const where: string[] = []
  const values: unknown[] = []
  const bind = (value: unknown): string => {
    values.push(value)
    return param(values.length)
  }
  if (search.text !== undefined) {
    // Bound once per use: SQLite's `?` cannot be named twice.
    const pattern = `%${search.text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    const byText = `lower(name) LIKE ${bind(pattern)} ESCAPE '\\' OR lower(token_hint) LIKE ${bind(pattern)} ESCAPE '\\'`
    const isId = /^[1-9][0-9]{0,15}$/.test(search.text) && Number.isSafeInteger(Number(search.text))
    where.push(`(${byText}${isId ? ` OR id = ${bind(Number(search.text))}` : ''})`)
  }
  if (search.state !== undefined) where.push(`${stateSql(bind(search.now))} = ${bind(search.state)}`)
  if (search.plan !== undefined) where.push(`plan = ${bind(search.plan)}`)
  const after = search.after
  let order: string
  if (search.sort === 'lastUsed') {
    if (after !== undefined) {
      const used = after.lastUsedAt ?? -1
      where.push(`(${LAST_USED} < ${bind(used)} OR (${LAST_USED} = ${bind(used)} AND id > ${bind(after.id)}))`)
    }
    order = `${LAST_USED} DESC, id`
  } else {
    if (after !== undefined) where.push(`id > ${bind(after.id)}`)
    order = 'id'
  }
  const sql = `${where.length === 0 ? '' : `WHERE ${where.join(' AND ')} `}ORDER BY ${order} LIMIT ${bind(search.limit)}`
  return { sql, values }
}
