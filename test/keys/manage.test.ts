import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openSqlite } from '../../src/db/sqlite.js'
import { issueKey, type IssueKeyInput } from '../../src/keys/manage.js'
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
        await assert.rejects(issued, /is required for an enterprise key/)
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

describe('the scopes, expiry and hint of an issued key', () => {
  it('When a key is issued without scopes or expiry, then it has both scopes, never expires, and its hint is its prefix and last four characters', async () => {
    // Arrange
    const storage = openSqlite('sqlite::memory:')
    try {
      // Act
      const key = await issueKey(storage, buildKeyRequest())

      // Assert
      assert.deepEqual(key.scopes, ['pets:read', 'pets:write'])
      assert.equal(key.expiresAt, null)
      assert.equal(key.lastUsedAt, null)
      assert.equal(key.tokenHint, `pet_live_…${key.token.slice(-4)}`)
    } finally {
      await storage.close()
    }
  })

  it('When a key is issued with one scope and an expiry, then it has them, the expiry as RFC 3339 in UTC', async () => {
    // Arrange
    const storage = openSqlite('sqlite::memory:')
    try {
      // Act
      const key = await issueKey(storage, buildKeyRequest({ scopes: ['pets:read'], expiresAt: Date.parse('2027-04-01T00:00:00Z') }))

      // Assert
      assert.deepEqual(key.scopes, ['pets:read'])
      assert.equal(key.expiresAt, '2027-04-01T00:00:00.000Z')
    } finally {
      await storage.close()
    }
  })

  const refused: Array<[string, Partial<IssueKeyInput>, RegExp]> = [
    ['an expiry now', { expiresAt: CLOCK_START }, /expiresAt must be in the future/],
    ['an expiry in the past', { expiresAt: CLOCK_START - 1 }, /expiresAt must be in the future/],
    ['no scope', { scopes: [] }, /scopes must name at least one/]
  ]
  for (const [what, input, message] of refused) {
    it(`When a key is asked for with ${what}, then it is refused and no key is stored`, async () => {
      // Arrange
      const storage = openSqlite('sqlite::memory:')
      try {
        // Act
        const issued = issueKey(storage, buildKeyRequest(input))

        // Assert
        await assert.rejects(issued, message)
        assert.deepEqual(await storage.listApiKeys(), [])
      } finally {
        await storage.close()
      }
    })
  }
})
