import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { addressSubject } from '../../src/limits/subject.js'

describe('whom a request without a valid key is counted against', () => {
  it('When the address is dotted-quad IPv4, then it is the subject as it is', () => {
    assert.equal(addressSubject('127.0.0.1'), 'addr:127.0.0.1')
    assert.equal(addressSubject('255.255.255.255'), 'addr:255.255.255.255')
  })

  it('When an IPv4 address comes mapped into IPv6, then it is the same subject as the IPv4 address', () => {
    assert.equal(addressSubject('::ffff:198.51.100.7'), 'addr:198.51.100.7')
    assert.equal(addressSubject('::FFFF:c633:6407'), 'addr:198.51.100.7')
  })

  it('When IPv6 addresses share a /64, then they are one subject, however they are written', () => {
    const subject = addressSubject('2001:db8:0:1::1')
    assert.equal(subject, 'addr:2001:db8:0:1::/64')
    assert.equal(addressSubject('2001:0DB8:0000:0001:ffff:ffff:ffff:ffff'), subject)
    assert.notEqual(addressSubject('2001:db8:0:2::1'), subject)
  })

  it('When the text is not an address, then every such request shares one subject', () => {
    for (const text of ['', 'unknown', '256.1.1.1', '1.2.3.4, 5.6.7.8']) {
      assert.equal(addressSubject(text), 'addr:unknown', text)
    }
  })
})
