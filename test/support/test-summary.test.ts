// The test run's last line (test/support/test-summary.ts), from the events
// node:test gives a reporter, as Node 20 and 24 send them for each case.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import type { TestEvent } from 'node:test/reporters'
import fc from 'fast-check'
import testSummary from './test-summary.js'

type Outcome = 'pass' | 'fail'
/** Why the runner says a test or suite failed, as it sets `failureType` on its ERR_TEST_FAILURE. */
type FailureType = 'subtestsFailed' | 'hookFailed' | 'testCodeFailure' | 'cancelledByParent'
interface Reported { outcome: Outcome, nesting: number, suite?: boolean, skip?: boolean, todo?: boolean, file?: string, name?: string, why?: FailureType, error?: Error }

/**
 * The events of one test or suite ending, as the runner reports them (only
 * what the reporter reads is filled in); a failed suite failed because of
 * its tests unless `why` says otherwise.
 */
function ended ({ outcome, nesting, suite = false, skip, todo, file = 'a.test.js', name = 'a test', why, error }: Reported): TestEvent {
  const failure = Object.assign(new Error('failed', { cause: error }), { failureType: why ?? (suite ? 'subtestsFailed' : 'testCodeFailure') })
  const data = {
    name,
    nesting,
    file,
    testNumber: 1,
    details: { duration_ms: 1, ...(suite ? { type: 'suite' as const } : {}), ...(outcome === 'fail' ? { error: failure } : {}) },
    ...(skip === true ? { skip: true } : {}),
    ...(todo === true ? { todo: true } : {})
  }
  // The event's data types differ between pass and fail by the error alone, filled in above.
  return { type: `test:${outcome}`, data } as unknown as TestEvent
}

async function writtenFor (events: TestEvent[]): Promise<string> {
  async function * source (): AsyncGenerator<TestEvent> { yield * events }
  let written = ''
  for await (const chunk of testSummary(source())) written += chunk
  return written
}

/** The last line written: the counts. */
async function lineOf (events: TestEvent[]): Promise<string> {
  return `${(await writtenFor(events)).split('\n').at(-2) ?? ''}\n`
}

describe('the test run\'s summary line', () => {
  it('When every test passes, then the line is "N passed, 0 failed", suites not counted', async () => {
    const line = await lineOf([
      ended({ outcome: 'pass', nesting: 1 }), ended({ outcome: 'pass', nesting: 1 }), ended({ outcome: 'pass', nesting: 0, suite: true }),
      ended({ outcome: 'pass', nesting: 0 })
    ])

    assert.equal(line, '3 passed, 0 failed\n')
  })

  it('When tests fail, are skipped or are todo, then each is counted once under its own name, and a suite that failed because of them adds nothing', async () => {
    const line = await lineOf([
      ended({ outcome: 'pass', nesting: 1 }),
      ended({ outcome: 'fail', nesting: 1 }),
      ended({ outcome: 'pass', nesting: 1, skip: true }),
      ended({ outcome: 'fail', nesting: 1, todo: true }),
      ended({ outcome: 'fail', nesting: 0, suite: true })
    ])

    assert.equal(line, '1 passed, 1 failed, 1 skipped, 1 todo\n')
  })

  it('When a suite fails with no failed test in it (its callback threw, or its after hook failed), then it counts as one failure', async () => {
    const line = await lineOf([
      ended({ outcome: 'fail', nesting: 0, suite: true, why: 'testCodeFailure' }),
      ended({ outcome: 'pass', nesting: 1, file: 'b.test.js' }),
      ended({ outcome: 'fail', nesting: 0, suite: true, file: 'b.test.js', why: 'hookFailed' })
    ])

    assert.equal(line, '1 passed, 2 failed\n')
  })

  it('When a test nested two suites deep fails, then only the test counts, not either suite; a later failing suite at that depth is counted apart', async () => {
    const line = await lineOf([
      ended({ outcome: 'fail', nesting: 2 }),
      ended({ outcome: 'fail', nesting: 1, suite: true }),
      ended({ outcome: 'fail', nesting: 1, suite: true, why: 'hookFailed' }),
      ended({ outcome: 'fail', nesting: 0, suite: true })
    ])

    assert.equal(line, '0 passed, 2 failed\n')
  })

  it('When a test file cannot be run at all, then the file counts as one failure', async () => {
    const line = await lineOf([ended({ outcome: 'fail', nesting: 0, file: 'broken.test.js' })])

    assert.equal(line, '0 passed, 1 failed\n')
  })

  it('When tests fail, then a line for each, naming the file it is declared in, its name and the first line of what it threw, comes before the counts', async () => {
    const here = join(process.cwd(), 'dist/test/a.test.js')
    const written = await writtenFor([
      ended({ outcome: 'pass', nesting: 2, file: here }),
      ended({ outcome: 'fail', nesting: 2, file: here, name: 'adds up', error: new Error('expected 3\nmore detail') }),
      ended({ outcome: 'fail', nesting: 1, suite: true, file: here, name: 'arithmetic' }),
      // The suite a group of files gives each of them (scripts/run-tests.js), declared in the group's file.
      ended({ outcome: 'fail', nesting: 0, suite: true, file: '/tmp/group-1.test.js', name: 'dist/test/a.test.js' })
    ])

    assert.equal(written, 'failed: dist/test/a.test.js › adds up: expected 3\n1 passed, 1 failed\n')
  })

  it('When a property fails, then its line has fast-check\'s replay and the first line of what the property threw', async () => {
    // Arrange: a real fast-check failure, whose error keeps what the property threw as its cause.
    const here = join(process.cwd(), 'dist/test/a.test.js')
    const thrown = await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 9 }), async (n) => {
      if (n > 4) throw new Error(`too big: ${n}\nmore detail`)
    }), { seed: 42 }).then(() => undefined, (error: unknown) => error)
    assert.ok(thrown instanceof Error, 'the property failed')

    // Act
    const written = await writtenFor([ended({ outcome: 'fail', nesting: 1, file: here, name: 'stays small', error: thrown })])

    // Assert
    assert.match(written.split('\n')[0] ?? '', /^failed: dist\/test\/a\.test\.js › stays small: Property failed after \d+ tests ← \{ seed: 42, path: "[\d:]+", endOnFailure: true \} ← too big: 5$/)
  })
})
