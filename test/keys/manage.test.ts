import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import {
  KeyRevokedError, KeyRuleError, NoSuchKeyError, UnknownTokenError, findKey, issueKey, keyUsage, listKeys, revokeKey, rollKey, showKey, updateKey, type IssueKeyInput
} from '../../src/keys/manage.js'
import { generateToken, hashToken, inspectToken, tokenHint } from '../../src/keys/tokens.js'
import { MAX_OVERLAP_SECONDS } from '../../src/domain.js'
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

describe('the cap of requests in flight of an issued key', () => {
  it('When keys are issued with and without a cap of their own, then each shows its own, or else its plan\'s', async () => {
    // Arrange
    const storage = openSqlite('sqlite::memory:')
    try {
      // Act
      const own = await issueKey(storage, buildKeyRequest({ plan: 'pro', concurrency: 2 }))
      const most = await issueKey(storage, buildKeyRequest({ concurrency: 10_000 }))
      const plans = await Promise.all((['free', 'pro', 'business'] as const).map(async (plan) => await issueKey(storage, buildKeyRequest({ plan }))))
      const enterprise = await issueKey(storage, buildKeyRequest({ plan: 'enterprise', perMinute: 10, perDay: 100 }))

      // Assert
      assert.deepEqual([own.concurrency, most.concurrency], [2, 10_000])
      assert.deepEqual([...plans, enterprise].map((key) => key.concurrency), [5, 25, 100, 100])
      assert.equal((await showKey(storage, own.id, CLOCK_START)).concurrency, 2)
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
    ['no scope', { scopes: [] }, /scopes must name at least one/],
    // 9999-12-31T23:59:59.999999999-23:59 is in year 10000 in UTC, which no answer's RFC 3339 can write.
    ['an expiry past year 9999 in UTC', { expiresAt: Date.UTC(10_000, 0, 1, 23, 58, 59, 999) }, /expiresAt must lie between 0100-01-01T00:00:00Z and 9999-12-31T23:59:59\.999Z/],
    ['a cap of 0 requests in flight', { concurrency: 0 }, /concurrency must be an integer from 1 to 10000/],
    ['a cap of 10001 requests in flight', { concurrency: 10_001 }, /concurrency must be an integer from 1 to 10000/],
    ['a cap of 1.5 requests in flight', { concurrency: 1.5 }, /concurrency must be an integer from 1 to 10000/]
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

/** An in-memory database for one test, closed after it. */
async function withStorage (work: (storage: Storage) => Promise<void>): Promise<void> {
  const storage = openSqlite('sqlite::memory:')
  try {
    await work(storage)
  } finally {
    await storage.close()
  }
}

const HOUR_MS = 3_600_000

/** Asserts that `promise` rejects with a KeyRuleError about `field`. */
async function assertRuleBroken (promise: Promise<unknown>, field: string, reason?: RegExp): Promise<void> {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof KeyRuleError, String(error))
    assert.equal(error.field, field)
    if (reason !== undefined) assert.match(error.reason, reason)
    return true
  })
}

describe('a key stored with an expiry no answer can write', () => {
  it('When a key was stored with an expiry in year 10000 (before such expiries were refused), then listing and showing it give its expiry as the last instant of 9999', async () => {
    // Arrange
    const storage = openSqlite('sqlite::memory:')
    try {
      const token = generateToken('production')
      const expiresAt = Date.UTC(10_000, 0, 1, 23, 58, 59, 999)
      const stored = await storage.createApiKey({ name: 'old', plan: 'free', perMinute: null, perDay: null, concurrency: null, environment: 'production', scopes: ['pets:read'], tokenHash: hashToken(token), tokenHint: tokenHint(token), createdAt: CLOCK_START, expiresAt })

      // Act
      const listed = await listKeys(storage, CLOCK_START)
      const shown = await showKey(storage, stored.id, CLOCK_START)

      // Assert
      assert.deepEqual(listed.map((key) => key.expiresAt), ['9999-12-31T23:59:59.999Z'])
      assert.equal(shown.expiresAt, '9999-12-31T23:59:59.999Z')
    } finally {
      await storage.close()
    }
  })
})

describe('reading a key', () => {
  it('When no key has the id, then showing it is refused with NoSuchKeyError', () => withStorage(async (storage) => {
    await assert.rejects(showKey(storage, 999, CLOCK_START), new NoSuchKeyError(999))
  }))

  it('When no key has the id, then its usage is refused with NoSuchKeyError', () => withStorage(async (storage) => {
    await assert.rejects(keyUsage(storage, 999, {}, CLOCK_START), new NoSuchKeyError(999))
  }))
})

describe('changing a key', () => {
  it('When a key is updated, then the fields given change, the others keep their values, and the answer is the key as stored', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ name: 'before', expiresAt: CLOCK_START + HOUR_MS }))

    // Act
    const updated = await updateKey(storage, key.id, { name: 'after', plan: 'pro', scopes: ['pets:write', 'pets:read'] }, CLOCK_START)

    // Assert
    const { token, ...before } = key
    assert.deepEqual(updated, { ...before, name: 'after', plan: 'pro', perMinute: 300, perDay: 10_000, concurrency: 25 })
    assert.deepEqual(await showKey(storage, key.id, CLOCK_START), updated)
    assert.equal(JSON.stringify(updated).includes(token), false)
  }))

  it('When no key has the id, then an update is refused with NoSuchKeyError', () => withStorage(async (storage) => {
    await assert.rejects(updateKey(storage, 999, { name: 'x' }, CLOCK_START), new NoSuchKeyError(999))
  }))

  it('When a key becomes enterprise without its own limits, then it is refused, naming perMinute, and nothing changes', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ plan: 'pro' }))

    // Act, Assert
    await assertRuleBroken(updateKey(storage, key.id, { plan: 'enterprise' }, CLOCK_START), 'perMinute', /enterprise/)
    await assertRuleBroken(updateKey(storage, key.id, { plan: 'enterprise', perMinute: 10 }, CLOCK_START), 'perDay', /enterprise/)
    assert.equal((await showKey(storage, key.id, CLOCK_START)).plan, 'pro')
  }))

  it('When a key becomes enterprise with both limits, then it has them; when an enterprise key drops one, it is refused', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ plan: 'free' }))

    // Act
    const enterprise = await updateKey(storage, key.id, { plan: 'enterprise', perMinute: 10, perDay: 100 }, CLOCK_START)
    const dropped = updateKey(storage, key.id, { perDay: null }, CLOCK_START)

    // Assert
    assert.deepEqual([enterprise.plan, enterprise.perMinute, enterprise.perDay], ['enterprise', 10, 100])
    await assertRuleBroken(dropped, 'perDay')
  }))

  it('When fields of an update are there but undefined, then they keep their values and the rules still hold', () => withStorage(async (storage) => {
    // Arrange: what a caller building the update from optional inputs sends.
    const key = await issueKey(storage, buildKeyRequest({ plan: 'pro', name: 'kept', perMinute: 5, expiresAt: CLOCK_START + HOUR_MS }))

    // Act
    const renamed = await updateKey(storage, key.id, { name: undefined, perMinute: undefined, expiresAt: undefined, scopes: undefined, plan: 'business' }, CLOCK_START)
    const enterprise = updateKey(storage, key.id, { plan: 'enterprise', perMinute: undefined, perDay: undefined }, CLOCK_START)

    // Assert
    assert.deepEqual([renamed.name, renamed.plan, renamed.perMinute, renamed.expiresAt, renamed.scopes],
      ['kept', 'business', 5, key.expiresAt, ['pets:read', 'pets:write']])
    await assertRuleBroken(enterprise, 'perDay')
  }))

  it('When perMinute and perDay are set to null, then the key is back to its plan\'s limits', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ plan: 'pro', perMinute: 5, perDay: 50 }))

    // Act
    const back = await updateKey(storage, key.id, { perMinute: null, perDay: null }, CLOCK_START)

    // Assert
    assert.deepEqual([key.perMinute, key.perDay], [5, 50])
    assert.deepEqual([back.perMinute, back.perDay], [300, 10_000])
  }))

  it('When a key without a cap of its own changes plan, then its cap is the new plan\'s; a key with one keeps it', () => withStorage(async (storage) => {
    // Arrange
    const unset = await issueKey(storage, buildKeyRequest({ plan: 'free' }))
    const own = await issueKey(storage, buildKeyRequest({ plan: 'free', concurrency: 3 }))

    // Act
    const moved = await updateKey(storage, unset.id, { plan: 'business' }, CLOCK_START)
    const kept = await updateKey(storage, own.id, { plan: 'business' }, CLOCK_START)

    // Assert
    assert.deepEqual([unset.concurrency, moved.concurrency], [5, 100])
    assert.deepEqual([own.concurrency, kept.concurrency], [3, 3])
  }))

  it('When a cap of requests in flight is set, then the key has it; set to null, it is back to its plan\'s; out of bounds, it is refused and nothing changes', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ plan: 'pro' }))

    // Act
    const set = await updateKey(storage, key.id, { concurrency: 2 }, CLOCK_START)
    const back = await updateKey(storage, key.id, { concurrency: null }, CLOCK_START)
    const tooMany = updateKey(storage, key.id, { concurrency: 10_001 }, CLOCK_START)
    const none = updateKey(storage, key.id, { concurrency: 0 }, CLOCK_START)

    // Assert
    assert.deepEqual([key.concurrency, set.concurrency, back.concurrency], [25, 2, 25])
    await assertRuleBroken(tooMany, 'concurrency', /^must be an integer from 1 to 10000$/)
    await assertRuleBroken(none, 'concurrency')
    assert.equal((await showKey(storage, key.id, CLOCK_START)).concurrency, 25)
  }))

  it('When a new expiry is not in the future, then it is refused; null makes the key never expire', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ expiresAt: CLOCK_START + HOUR_MS }))

    // Act, Assert
    await assertRuleBroken(updateKey(storage, key.id, { expiresAt: CLOCK_START - 1 }, CLOCK_START), 'expiresAt', /future/)
    await assertRuleBroken(updateKey(storage, key.id, { expiresAt: CLOCK_START }, CLOCK_START), 'expiresAt', /future/)
    const never = await updateKey(storage, key.id, { expiresAt: null }, CLOCK_START)
    assert.equal(never.expiresAt, null)
  }))

  it('When a key whose expiry has passed is changed without touching its expiry, then the change is made and the expiry kept', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ expiresAt: CLOCK_START + HOUR_MS }))
    const later = CLOCK_START + 2 * HOUR_MS

    // Act
    const renamed = await updateKey(storage, key.id, { name: 'after its expiry' }, later)

    // Assert
    assert.deepEqual([renamed.name, renamed.expiresAt], ['after its expiry', key.expiresAt])
  }))

  it('When a key is left without scopes, then it is refused', () => withStorage(async (storage) => {
    const key = await issueKey(storage, buildKeyRequest())
    await assertRuleBroken(updateKey(storage, key.id, { scopes: [] }, CLOCK_START), 'scopes')
    assert.deepEqual((await showKey(storage, key.id, CLOCK_START)).scopes, ['pets:read', 'pets:write'])
  }))

  it('When a revoked key is updated, then it is refused with KeyRevokedError and stays as it was', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest({ name: 'gone' }))
    const revoked = await revokeKey(storage, key.id, CLOCK_START)

    // Act, Assert
    await assert.rejects(updateKey(storage, key.id, { name: 'back' }, CLOCK_START), KeyRevokedError)
    assert.deepEqual(await showKey(storage, key.id, CLOCK_START), revoked)
  }))
})

describe('rolling a key', () => {
  for (const overlap of [-1, MAX_OVERLAP_SECONDS + 1, 1.5, Number.NaN]) {
    it(`When the overlap is ${overlap} seconds, then it is refused, naming expireCurrentInSeconds, and the token is kept`, () => withStorage(async (storage) => {
      // Arrange
      const key = await issueKey(storage, buildKeyRequest())

      // Act, Assert
      await assertRuleBroken(rollKey(storage, key.id, overlap, CLOCK_START), 'expireCurrentInSeconds')
      assert.equal((await findKey(storage, key.token, CLOCK_START)).key.id, key.id)
      assert.equal((await showKey(storage, key.id, CLOCK_START)).tokenHint, key.tokenHint)
    }))
  }

  it('When a key is rolled with an overlap, then the answer has a new token, once, and both tokens name the key until the overlap ends', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest())

    // Act
    const rolled = await rollKey(storage, key.id, MAX_OVERLAP_SECONDS, CLOCK_START)

    // Assert
    assert.ok(rolled !== undefined)
    assert.notEqual(rolled.token, key.token)
    assert.ok(inspectToken(rolled.token).ok)
    assert.equal(rolled.tokenHint, `pet_live_…${rolled.token.slice(-4)}`)
    const overlapEnds = new Date(CLOCK_START + MAX_OVERLAP_SECONDS * 1000).toISOString()
    assert.equal(rolled.previousTokenExpiresAt, overlapEnds)
    const { token, ...shown } = rolled
    assert.deepEqual(await showKey(storage, key.id, CLOCK_START), shown)
    assert.ok(!JSON.stringify(await listKeys(storage, CLOCK_START)).includes(token), 'the token is listed')
    assert.equal((await findKey(storage, rolled.token, CLOCK_START)).key.id, key.id)
    assert.equal((await findKey(storage, key.token, CLOCK_START)).key.id, key.id)
    // Once the overlap has ended, the key no longer shows it.
    assert.equal((await showKey(storage, key.id, CLOCK_START + MAX_OVERLAP_SECONDS * 1000)).previousTokenExpiresAt, null)
  }))

  it('When a key is rolled with no overlap, then it shows none, and its token before still names the key, so that a leak found after the roll is traced', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest())

    // Act
    const rolled = await rollKey(storage, key.id, 0, CLOCK_START)

    // Assert
    assert.equal(rolled.previousTokenExpiresAt, null)
    assert.equal((await findKey(storage, key.token, CLOCK_START)).key.id, key.id)
    assert.equal((await findKey(storage, rolled.token, CLOCK_START)).key.id, key.id)
  }))

  it('When a revoked key is rolled, then it is refused with KeyRevokedError and its token is kept', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest())
    await revokeKey(storage, key.id, CLOCK_START)

    // Act, Assert
    await assert.rejects(rollKey(storage, key.id, 60, CLOCK_START), KeyRevokedError)
    assert.equal((await findKey(storage, key.token, CLOCK_START)).key.tokenHint, key.tokenHint)
  }))

  it('When no key has the id, then a roll is refused with NoSuchKeyError', () => withStorage(async (storage) => {
    await assert.rejects(rollKey(storage, 999, 60, CLOCK_START), new NoSuchKeyError(999))
  }))
})

describe('revoking a key', () => {
  it('When a key is revoked twice, then the second answer is the same key, revoked when it first was', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest())

    // Act
    const first = await revokeKey(storage, key.id, CLOCK_START)
    const second = await revokeKey(storage, key.id, CLOCK_START + HOUR_MS)

    // Assert
    assert.deepEqual([first.revoked, first.revokedAt], [true, new Date(CLOCK_START).toISOString()])
    assert.deepEqual(second, first)
  }))

  it('When no key has the id, then revoking is refused with NoSuchKeyError', () => withStorage(async (storage) => {
    await assert.rejects(revokeKey(storage, 999, CLOCK_START), new NoSuchKeyError(999))
  }))
})

describe('finding the key of a token', () => {
  it('When a token is a key\'s current or previous one, then the key is found, revoked or not; any other token finds none', () => withStorage(async (storage) => {
    // Arrange
    const key = await issueKey(storage, buildKeyRequest())
    const rolled = await rollKey(storage, key.id, 60, CLOCK_START)
    const revoked = await revokeKey(storage, key.id, CLOCK_START)
    const mistyped = `${key.token.slice(0, -1)}${key.token.endsWith('a') ? 'b' : 'a'}`

    // Act, Assert
    assert.deepEqual(await findKey(storage, rolled.token, CLOCK_START), { key: revoked, matchedToken: 'current' })
    // Revoking ended the overlap: the token before is no longer accepted.
    assert.deepEqual(await findKey(storage, key.token, CLOCK_START), { key: revoked, matchedToken: 'former' })
    await assert.rejects(findKey(storage, generateToken('production'), CLOCK_START), UnknownTokenError)
    await assert.rejects(findKey(storage, mistyped, CLOCK_START), UnknownTokenError)
    await assert.rejects(findKey(storage, 'not a token', CLOCK_START), UnknownTokenError)
    await assert.rejects(findKey(storage, '', CLOCK_START), UnknownTokenError)
  }))
})
