// A node:test reporter (`--test-reporter`) that writes the run's counts as
// one line, `N passed, N failed` (then skipped and todo, when there are
// any), for scripts/run-tests.js to print last.
// https://nodejs.org/api/test.html#custom-reporters
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
 * failed, and so does a suite that failed with no failed test in it (its
 * callback threw, or an after hook failed).
 */
export default async function * testSummary (source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0, todo: 0 }
  /** Per file, failures counted at each nesting level whose enclosing suite has not yet ended: a suite ends after everything in it. */
  const openFailures = new Map<string, number[]>()
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { data } = event
    const failures = openFailures.get(data.file ?? '') ?? []
    openFailures.set(data.file ?? '', failures)
    const inside = failures.splice(data.nesting + 1).reduce((sum, n) => sum + (n ?? 0), 0)
    let failed = 0
    if (data.details.type === 'suite') {
      failed = event.type === 'test:fail' && inside === 0 ? 1 : 0
      counts.failed += failed
    } else if (data.skip !== undefined && data.skip !== false) {
      counts.skipped++
    } else if (data.todo !== undefined && data.todo !== false) {
      counts.todo++
    } else if (event.type === 'test:fail') {
      counts.failed++
      failed = 1
    } else {
      counts.passed++
    }
    failures[data.nesting] = (failures[data.nesting] ?? 0) + inside + failed
  }
  yield `${summaryLine(counts)}\n`
}
