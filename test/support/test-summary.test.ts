// The test run's last line (test/support/test-summary.ts), from the events
// node:test gives a reporter, as Node 20 and 24 send them for each case.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestEvent } from 'node:test/reporters'
import testSummary from './test-summary.js'

type Outcome = 'pass' | 'fail'
interface Reported { outcome: Outcome, nesting: number, suite?: boolean, skip?: boolean, todo?: boolean, file?: string }

/** The events of one test or suite ending, as the runner reports them (only what the reporter reads is filled in). */
function ended ({ outcome, nesting, suite = false, skip, todo, file = 'a.test.js' }: Reported): TestEvent {
  const data = {
    name: 'a test',
    nesting,
    file,
    testNumber: 1,
    details: { duration_ms: 1, ...(suite ? { type: 'suite' as const } : {}), ...(outcome === 'fail' ? { error: new Error('failed') } : {}) },
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

/** A test or suite starting, as the runner reports it. */
function started (name: string, nesting: number, file = 'a.test.js'): TestEvent {
  return { type: 'test:start', data: { name, nesting, file } } as unknown as TestEvent
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
      ended({ outcome: 'fail', nesting: 0, suite: true }),
      ended({ outcome: 'pass', nesting: 1, file: 'b.test.js' }),
      ended({ outcome: 'fail', nesting: 0, suite: true, file: 'b.test.js' })
    ])

    assert.equal(line, '1 passed, 2 failed\n')
  })

  it('When a test nested two suites deep fails, then only the test counts, not either suite; a later failing suite at that depth is counted apart', async () => {
    const line = await lineOf([
      ended({ outcome: 'fail', nesting: 2 }),
      ended({ outcome: 'fail', nesting: 1, suite: true }),
      ended({ outcome: 'fail', nesting: 1, suite: true }),
      ended({ outcome: 'fail', nesting: 0, suite: true })
    ])

    assert.equal(line, '0 passed, 2 failed\n')
  })

  it('When a test file cannot be run at all, then the file counts as one failure', async () => {
    const line = await lineOf([ended({ outcome: 'fail', nesting: 0, file: 'broken.test.js' })])

    assert.equal(line, '0 passed, 1 failed\n')
  })

  it('When tests fail, then a line for each, naming its file, suites, name and the first line of what it threw, comes before the counts', async () => {
    // The runner wraps what a test threw (ERR_TEST_FAILURE), the thrown error its cause.
    const wrapped = new Error('test failed', { cause: new Error('expected 3\nmore detail') })
    const failing = { ...(ended({ outcome: 'fail', nesting: 1 }) as { data: object }), type: 'test:fail' } as unknown as TestEvent & { data: Record<string, unknown> }
    failing.data.name = 'adds up'
    failing.data.details = { duration_ms: 1, error: wrapped }
    const written = await writtenFor([
      started('arithmetic', 0), started('passes', 1), ended({ outcome: 'pass', nesting: 1 }),
      started('adds up', 1), failing,
      ended({ outcome: 'fail', nesting: 0, suite: true })
    ])

    assert.equal(written, 'failed: a.test.js › arithmetic › adds up: expected 3\n1 passed, 1 failed\n')
  })
})
