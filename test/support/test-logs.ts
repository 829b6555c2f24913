// Where the logs that tests produce are kept: `npm test`
// (scripts/run-tests.js) makes one folder per run, names it in
// PETSTORE_TEST_LOG_DIR, and scans every file in it for tokens and
// Authorization values once the run has ended (scripts/log-scan.js).
// Outside such a run nothing is kept.
import { basename, join } from 'node:path'

const LOG_DIR = process.env.PETSTORE_TEST_LOG_DIR

/** A file in the run's log folder, named after the test file, this process and `kind`; undefined outside a test run. */
export function testLogFile (kind: string): string | undefined {
  if (LOG_DIR === undefined || LOG_DIR === '') return undefined
  const testFile = basename(process.argv[1] ?? 'node', '.js')
  return join(LOG_DIR, `${testFile}.${process.pid}.${kind}.log`)
}
