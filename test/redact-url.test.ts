import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { redactUrl } from '../src/config.js'

// Regression: a password holding an unescaped `@` or `/` was shown in part
// (`postgres://u:***@ss@h/x`) in the start-up log and in configuration errors.
describe('connection URLs in logs and messages', () => {
  const cases: Array<[string, string, string]> = [
    ['a password', 'postgres://app:s3cret@db.internal:5432/petstore', 'postgres://app:***@db.internal:5432/petstore'],
    ['an unescaped @ in the password', 'postgres://app:p@ss@db:5432/petstore', 'postgres://app:***@db:5432/petstore'],
    ['an unescaped / in the password', 'postgres://app:pa/ss@db/petstore', 'postgres://app:***@db/petstore'],
    ['a password and an @ in the query', 'postgres://app:pw@db/petstore?application_name=me@host', 'postgres://app:***@db/petstore?application_name=me@host'],
    ['no password', 'postgres://app@db/petstore', 'postgres://app@db/petstore'],
    ['no credentials', 'postgres://127.0.0.1:1/x', 'postgres://127.0.0.1:1/x'],
    ['a SQLite path', 'sqlite:./data/petstore.db', 'sqlite:./data/petstore.db'],
    ['a Redis password alone', 'redis://:s3cret@redis.internal:6379/0', 'redis://:***@redis.internal:6379/0'],
    ['a Redis Cluster password', 'redis+cluster://u:p@ss@h1:7000,h2:7000', 'redis+cluster://u:***@h1:7000,h2:7000']
  ]
  for (const [what, url, shown] of cases) {
    it(`When a URL with ${what} is shown, then no part of the password remains`, () => {
      // Act
      const redacted = redactUrl(url)

      // Assert
      assert.equal(redacted, shown)
    })
  }
})
