// A node:test reporter (`--test-reporter`) that writes the run's counts as
// one line, `N passed, N failed` (then skipped and todo, when there are
// any), for scripts/run-tests.js to print last, after a line for each
// failure (`failed: FILE › TEST: MESSAGE ← CAUSE`): a CI log kept only by
// its end still says what failed.
// https://nodejs.org/api/test.html#custom-reporters
import { relative } from 'node:path'
import type { TestEvent } from 'node:test/reporters'

interface Counts { passed: number, failed: number, skipped: number, todo: number }

/** The line a person and a CI read: `1284 passed, 0 failed, 1 skipped`. */
function summaryLine ({ passed, failed, skipped, todo }: Counts): string {
  return [`${passed} passed`, `${failed} failed`, ...(skipped > 0 ? [`${skipped} skipped`] : []), ...(todo > 0 ? [`${todo} todo`] : [])].join(', ')
}

/**
 * Tests are counted as Node's own summary counts them, but for two things
 * that summary leaves out of its failures while the run still fails: a
 * cancelled test (its suite's hook failed, or the run timed out) counts as
 * failed, and so does a suite that failed for a reason of its own (its
 * callback threw, or a hook failed) rather than because a test in it did.
 * Failures are told apart by the runner's `failureType`, not by where they
 * were declared: a file run in a group of them (scripts/run-tests.js) has
 * its tests declared in one file and its suite in another.
 */
export default async function * testSummary (source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0, todo: 0 }
  const failedLines: string[] = []
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { data } = event
    let failed = false
    if (data.details.type === 'suite') {
      failed = event.type === 'test:fail' && failureType(event.data.details.error) !== 'subtestsFailed'
    } else if (data.skip !== undefined && data.skip !== false) {
      counts.skipped++
    } else if (data.todo !== undefined && data.todo !== false) {
      counts.todo++
    } else if (event.type === 'test:fail') {
      failed = true
    } else {
      counts.passed++
    }
    if (failed && event.type === 'test:fail') {
      counts.failed++
      failedLines.push(`failed: ${relative(process.cwd(), data.file ?? '?')} › ${data.name}: ${gist(event.data.details.error)}`)
    }
  }
  for (const line of failedLines) yield `${line}\n`
  yield `${summaryLine(counts)}\n`
}

/** Why the runner says a test or suite failed (`subtestsFailed`, `hookFailed`, `testCodeFailure`, …), from its `ERR_TEST_FAILURE`. */
function failureType (error: Error): unknown {
  return (error as Error & { failureType?: unknown }).failureType
}

/**
 * What a test threw, in a line: its first line, then the first line of each
 * error it was caused by. fast-check's error says which run failed and keeps
 * what the property threw as its cause, so that line also carries its
 * replay (`{ seed: …, path: … }`): a CI log kept only by its end still tells
 * why, and how to run it again.
 */
function gist (error: Error): string {
  const parts: string[] = []
  // Through the runner's wrapper (`ERR_TEST_FAILURE`) first; at most a few causes deep, against a cycle.
  let cause: unknown = error.cause ?? error
  for (let depth = 0; depth < 4 && cause !== undefined; depth++) {
    const message = cause instanceof Error ? cause.message : String(cause)
    const lines = message.split('\n').map((line) => line.trim()).filter((line) => line !== '')
    parts.push(...lines.slice(0, 1), ...lines.filter((line) => line.startsWith('{ seed: ')))
    cause = cause instanceof Error ? cause.cause : undefined
  }
  return parts.map((part) => part.slice(0, 300)).join(' ← ') || '(no message)'
}
