// How hard the slow tests push: a few iterations in `npm test`, the full
// number under `npm run test:soak` (PETSTORE_SOAK=1), as docs/DEVELOPING.md says.

/** True under `npm run test:soak`. */
const SOAK = process.env.PETSTORE_SOAK === '1'

/** `quick` in `npm test`, `full` under `npm run test:soak`. */
export function iterations (quick: number, full: number): number {
  return SOAK ? full : quick
}
