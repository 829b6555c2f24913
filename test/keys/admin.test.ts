import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openSqlite } from '../../src/db/sqlite.js'
import { issueKey, type IssueKeyInput } from '../../src/keys/admin.js'
import { CLOCK_START } from '../support/fixtures.js'

/** What `petstore keys create` asks for, on a free key unless told otherwise. */
function buildKeyRequest (overrides: Partial<IssueKeyInput> = {}): IssueKeyInput {
  return { plan: 'free', name: 'test', perMinute: undefined, perDay: undefined, environment: 'production', now: CLOCK_START, ...overrides }
}

describe('issuing API keys', () => {
  const incomplete: Array<[string, Partial<IssueKeyInput>]> = [
    ['neither limit', {}],
    ['only a per-minute limit', { perMinute: 100 }],
    ['only a per-day limit', { perDay: 10_000 }]
  ]
  for (const [when, limits] of incomplete) {
    it(`When an enterprise key is asked for with ${when}, then it is refused and no key is stored`, async () => {
      // Arrange
      const storage = openSqlite('sqlite::memory:')
      try {
        // Act
        const issued = issueKey(storage, buildKeyRequest({ plan: 'enterprise', ...limits }))

        // Assert
        await assert.rejects(issued, /an enterprise key needs --per-minute and --per-day/)
        assert.deepEqual(await storage.listApiKeys(), [])
      } finally {
        await storage.close()
      }
    })
  }

  it('When an enterprise key is asked for with both limits, then it is issued with them', async () => {
    // Arrange
    const storage = openSqlite('sqlite::memory:')
    try {
      // Act
      const key = await issueKey(storage, buildKeyRequest({ plan: 'enterprise', perMinute: 5_000, perDay: 1_000_000 }))

      // Assert
      assert.equal(key.plan, 'enterprise')
      assert.deepEqual([key.perMinute, key.perDay], [5_000, 1_000_000])
      assert.equal((await storage.listApiKeys()).length, 1)
    } finally {
      await storage.close()
    }
  })
})
