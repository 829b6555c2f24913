// Paging cursors: opaque to clients, and signed, so the service accepts only
// cursors it made. A cursor holds the last id of the previous page and the
// status filter it was made for: paging is by key, so every page costs the
// same whatever its depth.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { PET_STATUSES, type PetStatus } from '../domain.js'

const VERSION = 1
const MAC_BYTES = 12
const PAYLOAD_BYTES = 1 + 8 + 1
/** Cursors remembered, made or checked; the least recently used go first. */
const REMEMBERED = 10_000

export interface CursorPosition {
  afterId: bigint
  status: PetStatus | undefined
}

export class CursorCodec {
  /** Imported once: a raw key would be imported again for every cursor. */
  readonly #secret: KeyObject
  /**
   * Both directions remembered, since signing was a page's dearest step after the
   * query and a cursor sent is most often one just made or one many clients share
   * (docs/PERFORMANCE.md, "What each change bought").
   */
  readonly #cursors = new LRUCache<string, string>({ max: REMEMBERED })
  readonly #positions = new LRUCache<string, CursorPosition>({ max: REMEMBERED })

  constructor (secret: Buffer) {
    this.#secret = createSecretKey(secret)
  }

  encode (position: CursorPosition): string {
    const statusIndex = position.status === undefined ? 0 : PET_STATUSES.indexOf(position.status) + 1
    const key = `${statusIndex}:${position.afterId}`
    let cursor = this.#cursors.get(key)
    if (cursor === undefined) {
      const payload = Buffer.alloc(PAYLOAD_BYTES)
      payload.writeUInt8(VERSION, 0)
      payload.writeBigUInt64BE(position.afterId, 1)
      payload.writeUInt8(statusIndex, 9)
      cursor = Buffer.concat([payload, this.#mac(payload)]).toString('base64url')
      this.#cursors.set(key, cursor)
      this.#positions.set(cursor, { afterId: position.afterId, status: position.status })
    }
    return cursor
  }

  /** The position a cursor stands for, or undefined when the service did not make it. */
  decode (cursor: string): CursorPosition | undefined {
    const known = this.#positions.get(cursor)
    if (known !== undefined) return { ...known }
    const position = this.#verify(cursor)
    if (position !== undefined) this.#positions.set(cursor, { ...position })
    return position
  }

  #verify (cursor: string): CursorPosition | undefined {
    const bytes = Buffer.from(cursor, 'base64url')
    if (bytes.length !== PAYLOAD_BYTES + MAC_BYTES || bytes.toString('base64url') !== cursor) return undefined
    const payload = bytes.subarray(0, PAYLOAD_BYTES)
    if (!timingSafeEqual(bytes.subarray(PAYLOAD_BYTES), this.#mac(payload))) return undefined
    if (payload.readUInt8(0) !== VERSION) return undefined
    const statusIndex = payload.readUInt8(9)
    if (statusIndex > PET_STATUSES.length) return undefined
    return {
      afterId: payload.readBigUInt64BE(1),
      status: statusIndex === 0 ? undefined : PET_STATUSES[statusIndex - 1]
    }
  }

  #mac (payload: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(payload).digest().subarray(0, MAC_BYTES)
  }
}
