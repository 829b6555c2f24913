// What tracing writes of an error's message or stack, or any attribute
// (src/tracing/redacting-exporter.ts): tokens and ADMIN_TOKEN redacted as the
// log redacts them in a URL, in whatever text holds them.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateToken } from '../../src/keys/tokens.js'
import { loggableText } from '../../src/telemetry/loggable-url.js'

const ADMIN_TOKEN = 'q8Zr/4Kd+Wm2Xp9Lt0Vb7Ns3Hc6Jf1Gy5Ue8Ra2Io4E='
const encodeAll = (text: string): string => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('')

function formsOf (token: string): Array<[string, string]> {
  return [
    ['as sent', token],
    ['without its prefix', token.replace(/^pet_(live|test)_/, '')],
    ['wholly percent-encoded', encodeAll(token)],
    ['base64url-encoded', Buffer.from(token).toString('base64url')],
    ['hex-encoded', Buffer.from(token).toString('hex')]
  ]
}

describe('text that may echo a request, as tracing writes it', () => {
  for (const [whose, token] of [['a production', generateToken('production')], ['a staging', generateToken('staging')]] as const) {
    for (const [form, sent] of formsOf(token)) {
      it(`When a 404's message names a path ending in ${whose} token ${form}, then the token is [redacted] and the rest kept`, () => {
        // Act
        const text = loggableText(`Nothing is at GET /v1/nope/${sent}.`, [ADMIN_TOKEN])

        // Assert
        assert.equal(text, 'Nothing is at GET /v1/nope/[redacted].')
      })
    }
  }

  for (const [form, sent] of formsOf(ADMIN_TOKEN).filter(([form]) => form !== 'without its prefix')) {
    it(`When a validation error's stack names ADMIN_TOKEN ${form} as a field, then the token is [redacted]`, () => {
      // Act
      const text = loggableText(`Error: querystring/${sent} is not a known field\n    at defaultSchemaErrorFormatter (/srv/node_modules/fastify/lib/context.js:92:10)`, [ADMIN_TOKEN])

      // Assert
      assert.equal(text, 'Error: querystring/[redacted] is not a known field\n    at defaultSchemaErrorFormatter (/srv/node_modules/fastify/lib/context.js:92:10)')
    })
  }

  it('When text holds no token (a route, SQL, a Redis call), then it is kept as it is', () => {
    for (const text of ['GET /v1/pets/:petId', 'SELECT id, name FROM pets WHERE id > $1 ORDER BY id LIMIT $2', 'evalsha 3f2a1b 2 rl:key:123:minute rl:key:123:day 60 1000']) {
      assert.equal(loggableText(text, [ADMIN_TOKEN]), text)
    }
  })
})
