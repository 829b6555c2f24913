// A key's share of each turn of the event loop (docs/API.md: Requests in
// flight): a key that sends many requests at once is served a share a turn,
// and another key's request that arrives beside them is served first.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SHARE_A_TURN } from '../../src/limits/turn-share.js'
import { buildTestApp, type TestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'

describe('the gate shares each turn between keys', () => {
  let t: TestApp | undefined
  afterEach(async () => { await t?.close() })

  it('When a greedy key sends 40 listings at once and a polite key one, then the polite key is answered before most of the greedy key\'s, and every request is served', async () => {
    // Arrange
    t = await buildTestApp()
    const app = t.app
    const greedy = await t.newKey('enterprise', { perMinute: 1_000, perDay: 10_000 })
    const polite = await t.newKey('pro')
    const answered: string[] = []
    const list = async (who: string, token: string): Promise<number> => {
      const answer = await app.inject({ method: 'GET', url: '/v1/pets', headers: bearer(token) })
      answered.push(who)
      return answer.statusCode
    }

    // Act
    const greedyAnswers = Array.from({ length: 40 }, async () => await list('greedy', greedy))
    const politeAnswer = list('polite', polite)
    const statuses = await Promise.all([...greedyAnswers, politeAnswer])

    // Assert
    assert.deepEqual(new Set(statuses), new Set([200]))
    const politeAt = answered.indexOf('polite')
    assert.ok(politeAt <= SHARE_A_TURN, `the polite key was answered after ${politeAt} of the greedy key's 40 (its share a turn is ${SHARE_A_TURN})`)
  })
})
