// What the public gate and the admin listener both read of a request's
// credentials before looking at them.

/** How many Authorization headers a request carries: Node keeps only the first. */
export function authorizationHeaders (raw: readonly string[]): number {
  let count = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++
  }
  return count
}
