// verifyWebhook: a delivery signed as the service signs it (an HMAC-SHA256
// of `id.timestamp.body` with the secret's bytes, as the Standard Webhooks
// specification says) verifies and comes back typed, ids past 2^53 exact;
// a changed body, another secret, an old timestamp or a missing header is
// refused with the library's error; an authentic event of a type the
// client does not describe is told apart.
import { createHmac, randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { UnknownWebhookEventError, WebhookVerificationError, verifyWebhook, type WebhookEvent } from 'petstore-client'

/** A secret as the service makes one: `whsec_` and the base64 of 32 random bytes. */
function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/** The headers the service sends with `body`, signed at `atSeconds` with each secret. */
function signed (secrets: string[], id: string, body: string, atSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
    return `v1,${createHmac('sha256', key).update(`${id}.${atSeconds}.${body}`).digest('base64')}`
  })
  return { 'webhook-id': id, 'webhook-timestamp': String(atSeconds), 'webhook-signature': signatures.join(' ') }
}

const PET_BODY = '{"type":"pet.created","timestamp":"2027-03-10T12:00:30.123Z","data":{"id":9007199254740993,"name":"Rex","categoryId":9223372036854775807,"status":"available"}}'

describe('verifyWebhook', () => {
  it('When a pet.created body is signed as the service signs it, then it verifies and yields the typed event with its int64 ids exact', () => {
    // Arrange
    const secret = newSecret()
    const headers = signed([secret], 'evt_42', PET_BODY)

    // Act
    const event: WebhookEvent = verifyWebhook(secret, PET_BODY, headers)

    // Assert: the union narrows on `type`, and the ids are bigints, digit for digit.
    assert.equal(event.type, 'pet.created')
    if (event.type !== 'pet.created') return
    const id: bigint = event.data.id
    assert.equal(id, 9007199254740993n)
    assert.equal(event.data.categoryId, 9223372036854775807n)
    assert.deepEqual(event, { type: 'pet.created', timestamp: '2027-03-10T12:00:30.123Z', data: { id: 9007199254740993n, name: 'Rex', categoryId: 9223372036854775807n, status: 'available' } })
  })

  it('When the body comes as bytes, the headers as a Headers with two signatures (a rolled secret\'s overlap), then it verifies with either secret', () => {
    // Arrange
    const [current, previous] = [newSecret(), newSecret()]
    const body = '{"type":"webhook.test","timestamp":"2027-03-10T12:00:30.123Z","data":{"endpointId":3,"message":"A test event, sent by an operator; it announces no change."}}'
    const headers = new Headers(signed([current, previous], 'evt_7', body))

    // Act
    const events = [current, previous].map((secret) => verifyWebhook(secret, new TextEncoder().encode(body), headers))

    // Assert
    for (const event of events) {
      assert.equal(event.type, 'webhook.test')
      if (event.type === 'webhook.test') assert.equal(event.data.endpointId, 3)
    }
  })

  it('When the body is changed by one character, then it is refused with WebhookVerificationError', () => {
    // Arrange
    const secret = newSecret()
    const headers = signed([secret], 'evt_42', PET_BODY)
    const tampered = PET_BODY.replace('9007199254740993', '9007199254740994')

    // Act, Assert
    assert.throws(() => verifyWebhook(secret, tampered, headers), WebhookVerificationError)
  })

  it('When it was signed with another secret, then it is refused with WebhookVerificationError', () => {
    // Arrange
    const headers = signed([newSecret()], 'evt_42', PET_BODY)

    // Act, Assert
    assert.throws(() => verifyWebhook(newSecret(), PET_BODY, headers), WebhookVerificationError)
  })

  it('When its timestamp is more than 5 minutes old or ahead, then it is refused with WebhookVerificationError, though the signature matches', () => {
    // Arrange
    const secret = newSecret()
    const now = Math.floor(Date.now() / 1000)
    const old = signed([secret], 'evt_42', PET_BODY, now - 6 * 60)
    const ahead = signed([secret], 'evt_42', PET_BODY, now + 6 * 60)

    // Act, Assert
    assert.throws(() => verifyWebhook(secret, PET_BODY, old), (error) => error instanceof WebhookVerificationError && /too old/.test(error.message))
    assert.throws(() => verifyWebhook(secret, PET_BODY, ahead), (error) => error instanceof WebhookVerificationError && /too new/.test(error.message))
    assert.equal(verifyWebhook(secret, PET_BODY, signed([secret], 'evt_42', PET_BODY, now - 4 * 60)).type, 'pet.created')
  })

  it('When the signature header is missing, then it is refused with WebhookVerificationError', () => {
    // Arrange
    const secret = newSecret()
    const { 'webhook-signature': _signature, ...headers } = signed([secret], 'evt_42', PET_BODY)

    // Act, Assert
    assert.throws(() => verifyWebhook(secret, PET_BODY, headers), WebhookVerificationError)
  })

  it('When an authentic event is of a type the client does not describe, then UnknownWebhookEventError carries it, so that the receiver can answer 2xx', () => {
    // Arrange
    const secret = newSecret()
    const body = '{"type":"key.created","timestamp":"2027-03-10T12:00:30.123Z","data":{"id":5}}'
    const headers = signed([secret], 'evt_43', body)

    // Act, Assert
    assert.throws(() => verifyWebhook(secret, body, headers), (error) => error instanceof UnknownWebhookEventError &&
      error.type === 'key.created' && error.webhookId === 'evt_43' && (error.event as { type: string }).type === 'key.created')
  })
})
