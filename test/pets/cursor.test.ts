import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { CursorCodec } from '../../src/pets/cursor.js'
import { INT64_MAX } from '../support/fixtures.js'

/** The same cursor with one character of its signature changed. */
function tampered (cursor: string): string {
  const last = cursor.at(-2) === 'A' ? 'B' : 'A'
  return `${cursor.slice(0, -2)}${last}${cursor.slice(-1)}`
}

describe('paging cursors', () => {
  it('When a position is encoded, then decoding gives it back, int64 ids and every filter included', () => {
    const codec = new CursorCodec(randomBytes(32))
    for (const status of [undefined, 'available', 'pending', 'sold'] as const) {
      for (const afterId of [0n, 1n, 2n ** 53n + 1n, INT64_MAX]) {
        assert.deepEqual(codec.decode(codec.encode({ afterId, status })), { afterId, status })
      }
    }
  })

  it('When the same position is encoded twice, then the cursor is the same', () => {
    const codec = new CursorCodec(randomBytes(32))
    assert.equal(codec.encode({ afterId: 42n, status: 'sold' }), codec.encode({ afterId: 42n, status: 'sold' }))
    assert.notEqual(codec.encode({ afterId: 42n, status: 'sold' }), codec.encode({ afterId: 42n, status: undefined }))
  })

  it('When another instance with the same secret reads a cursor, then it accepts it without having made it', () => {
    const secret = randomBytes(32)
    const cursor = new CursorCodec(secret).encode({ afterId: 7n, status: 'pending' })
    assert.deepEqual(new CursorCodec(secret).decode(cursor), { afterId: 7n, status: 'pending' })
  })

  it('When a cursor was made with another secret, or its signature was changed, then it is refused, even right after the genuine one was read', () => {
    const codec = new CursorCodec(randomBytes(32))
    const genuine = codec.encode({ afterId: 99n, status: undefined })
    assert.ok(codec.decode(genuine) !== undefined)
    assert.equal(codec.decode(tampered(genuine)), undefined)
    assert.equal(codec.decode(tampered(genuine)), undefined)
    const foreign = new CursorCodec(randomBytes(32)).encode({ afterId: 99n, status: undefined })
    assert.equal(codec.decode(foreign), undefined)
    assert.equal(codec.decode(''), undefined)
    assert.equal(codec.decode(`${genuine}=`), undefined)
  })

  it('When a caller changes a position it was given, then the cursor still stands for the position it was made for', () => {
    const codec = new CursorCodec(randomBytes(32))
    const cursor = codec.encode({ afterId: 5n, status: 'sold' })
    const position = codec.decode(cursor)
    assert.ok(position !== undefined)
    position.afterId = 6n
    assert.deepEqual(codec.decode(cursor), { afterId: 5n, status: 'sold' })
  })
})
