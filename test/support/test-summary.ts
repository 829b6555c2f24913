// A node:test reporter (`--test-reporter`) that writes the run's counts as
// one line, `N passed, N failed` (then skipped and todo, when there are
// any), for scripts/run-tests.js to print last, after a line for each
// failed test (`failed: FILE › SUITE › TEST: MESSAGE`): a CI log kept only
// by its end still says what failed.
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
 * failed, and so does a suite that failed with no failed test in it (its
 * callback threw, or an after hook failed).
 */
export default async function * testSummary (source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0, todo: 0 }
  /** Per file, failures counted at each nesting level whose enclosing suite has not yet ended: a suite ends after everything in it. */
  const openFailures = new Map<string, number[]>()
  /** Per file, the names of the suites and tests started, by nesting level. */
  const names = new Map<string, string[]>()
  const failedLines: string[] = []
  for await (const event of source) {
    if (event.type === 'test:start') {
      const path = names.get(event.data.file ?? '') ?? []
      path.splice(event.data.nesting, Infinity, event.data.name)
      names.set(event.data.file ?? '', path)
    }
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
    if (failed > 0 && event.type === 'test:fail') {
      const path = [...(names.get(data.file ?? '') ?? []).slice(0, data.nesting), data.name]
      failedLines.push(`failed: ${[relative(process.cwd(), data.file ?? '?'), ...path].join(' › ')}: ${firstLine(event.data.details.error)}`)
    }
  }
  for (const line of failedLines) yield `${line}\n`
  yield `${summaryLine(counts)}\n`
}

/** The first line of what a test threw, through the runner's wrapper (`ERR_TEST_FAILURE`, its `cause`). */
function firstLine (error: Error): string {
  const cause: unknown = error.cause ?? error
  const message = cause instanceof Error ? cause.message : String(cause)
  return message.split('\n').find((line) => line.trim() !== '')?.trim().slice(0, 300) ?? '(no message)'
}
