// A key's share of the service (docs/API.md: Requests in flight): a key
// that sends many requests at once is served a share of each turn of the
// event loop, and the database pool's places are given to keys in turn, so
// another key's request that arrives beside them is served first.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SHARE_A_TURN } from '../../src/limits/turn-share.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { buildTestApp, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { pausedListings } from '../support/paused-listings.js'
import { pollUntil } from '../support/process.js'

/** A store that says it has a pool of `max` connections, as PostgreSQL's does, and notes whose listing starts. */
function pooled (storage: Storage, max: number): Storage {
  return new Proxy(storage, {
    get (target, property, receiver) {
      if (property === 'poolUse') return () => ({ open: max, idle: 0, waiting: 0, max, longestWaitMs: 0 })
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
}

/** A greedy and a polite key on `t`, and a listing that notes whose answer came, in the order they come. */
async function greedyAndPolite (t: TestApp): Promise<{ greedy: string, polite: string, answered: string[], list: (who: string, token: string) => Promise<number> }> {
  const greedy = await t.newKey('enterprise', { perMinute: 1_000, perDay: 10_000 })
  const polite = await t.newKey('pro')
  const answered: string[] = []
  const list = async (who: string, token: string): Promise<number> => {
    const answer = await t.app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) })
    answered.push(who)
    return answer.statusCode
  }
  return { greedy, polite, answered, list }
}

describe('the gate shares each turn between keys', () => {
  let t: TestApp | undefined
  afterEach(async () => { await t?.close() })

  it('When a greedy key sends 40 listings at once and a polite key one, then the polite key is answered before most of the greedy key\'s, and every request is served', async () => {
    // Arrange
    t = await buildTestApp()
    const { greedy, polite, answered, list } = await greedyAndPolite(t)

    // Act
    const greedyAnswers = Array.from({ length: 40 }, async () => await list('greedy', greedy))
    const politeAnswer = list('polite', polite)
    const statuses = await Promise.all([...greedyAnswers, politeAnswer])

    // Assert
    assert.deepEqual(new Set(statuses), new Set([200]))
    const politeAt = answered.indexOf('polite')
    assert.ok(politeAt <= SHARE_A_TURN, `the polite key was answered after ${politeAt} of the greedy key's 40 (its share a turn is ${SHARE_A_TURN})`)
  })

  it('When a greedy key holds both of the pool\'s places with five more waiting, then a polite key\'s listing starts with the next place given back, not after the greedy key\'s', async () => {
    // Arrange
    const listings = pausedListings(openSqlite('sqlite::memory:'))
    t = await buildTestApp({}, { storage: pooled(listings.storage, 2) })
    const { greedy, polite, answered, list } = await greedyAndPolite(t)
    const greedyAnswers = Array.from({ length: 7 }, async () => await list('greedy', greedy))
    await pollUntil(async () => (listings.waiting() === 2 ? true : undefined), { ms: 5_000, every: 10, what: 'the pool\'s two places taken' })

    // Act
    const politeAnswer = list('polite', polite)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const waitingBeforeOpen = listings.waiting()
    listings.open()
    const statuses = await Promise.all([...greedyAnswers, politeAnswer])

    // Assert
    assert.equal(waitingBeforeOpen, 2, 'only the pool\'s two places reached the store')
    assert.deepEqual(new Set(statuses), new Set([200]))
    assert.ok(answered.indexOf('polite') <= 3, `the polite key was answered after ${answered.indexOf('polite')} of the greedy key's 7`)
  })
})
