import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateToken, hashToken, inspectToken } from '../../src/keys/tokens.js'

describe('API tokens', () => {
  it('When a token is made, then its prefix shows the environment and it carries 30 random base62 characters and a checksum', () => {
    const live = generateToken('production')
    const test = generateToken('staging')

    assert.match(live, /^pet_live_[0-9A-Za-z]{36}$/)
    assert.match(test, /^pet_test_[0-9A-Za-z]{36}$/)
    assert.deepEqual(inspectToken(live), { ok: true, environment: 'production' })
    assert.deepEqual(inspectToken(test), { ok: true, environment: 'staging' })
  })

  it('When tokens are made repeatedly, then none repeats', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => generateToken('production')))
    assert.equal(tokens.size, 1000)
  })

  it('When any one character of a token is mistyped, then the checksum refuses it', () => {
    const token = generateToken('production')
    for (let i = 'pet_live_'.length; i < token.length; i++) {
      const typo = token.slice(0, i) + (token[i] === 'x' ? 'y' : 'x') + token.slice(i + 1)
      assert.equal(inspectToken(typo).ok, false, `typo at ${i}`)
    }
  })

  it('When a token is hashed, then the hash is its SHA-256, in hex', () => {
    // A known answer (printf '%s' TOKEN | sha256sum): a hash that changed, or a token kept as it is, fails here.
    const token = 'pet_live_0123456789abcdefghijABCDEFGHIJ000000'
    assert.equal(hashToken(token), 'af9538d6160f52749d7b2e54b4fb11f3677b6c82494adade73117f85d2b57eb9')
  })

  it('When two tokens differ, then so do their hashes', () => {
    assert.notEqual(hashToken(generateToken('production')), hashToken(generateToken('production')))
  })
})
