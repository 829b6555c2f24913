// The rate-limit rule (rule.ts) over memory that every worker thread of one
// process shares, so that limits and bans hold exactly across workers without
// Redis: shards with a lock each, a subject's shard by a randomly seeded hash.
// Why by hand, and why so: docs/INTERNALS.md, section "Shared-memory store".
import { createHash, randomInt } from 'node:crypto'
import { threadId } from 'node:worker_threads'
import { countsUntil, decide, F_BANNED_UNTIL, RULE_FIELDS } from './rule.js'
import type { Decision, HitRequest, RateLimitStore, StoreHealth } from './store.js'

/**
 * Subjects kept at most, by default: twice the in-process store's, since a
 * subject lives only in its own shard and one shard fills before the table
 * does. 25.8 MB for the process; the odds: docs/INTERNALS.md, section "Shared-memory store".
 */
const DEFAULT_MAX_SUBJECTS = 200_000
/** Slots per shard: a miss scans every tag of its shard, 256 bytes. */
const SHARD_SLOTS = 64
/** Bytes of a subject kept as they are; a longer one is kept by its SHA-256 digest. `addr:` and the longest /64 prefix take 29. */
const SUBJECT_BYTES = 48
const DIGEST_BYTES = 32

/** The header: a version, the seed, the number of shards and of slots in each. One cache line. */
const HEADER_BYTES = 64
const H_VERSION = 0
const H_SEED = 1
const H_SHARDS = 2
const H_SLOTS = 3
const LAYOUT_VERSION = 1

/** Per shard: the lock word and a use counter, on a cache line of their own so that two shards' locks never share one. */
const SHARD_HEADER_BYTES = 64
/** Set in a lock word by a thread about to wait, so that the owner knows to wake it. */
const CONTENDED = 1 << 30
/** Spins before waiting: a shard is held well under a microsecond, far less than a wait and its wake-up cost. */
const SPINS = 64
/** One wait's length: a lost wake-up costs at most this. */
const WAIT_MS = 1
/** A shard held this long has an owner that died without its locks being released: the hit fails rather than hang the thread. */
const GIVE_UP_MS = 2000

/** Per slot, in a Float64Array: the rule's state (rule.ts), then when it stops counting and when it was last used. */
const F_COUNTS_UNTIL = RULE_FIELDS
const F_LAST_USED = RULE_FIELDS + 1
const SLOT_FIELDS = RULE_FIELDS + 2
/** A slot's length word: 0 for an empty slot, else the subject's length plus one, or DIGESTED. */
const DIGESTED = SUBJECT_BYTES + 2
/** The state of a subject the table does not hold, for a look at it: decide() writes nothing on a look, so it stays all zero. */
const NOT_KEPT = new Float64Array(RULE_FIELDS)

/** What the main thread makes once and hands to every worker (in workerData): structured cloning shares a SharedArrayBuffer, never copies it. */
export interface SharedLimits {
  readonly buffer: SharedArrayBuffer
}

export interface SharedLimitsOptions {
  /** See DEFAULT_MAX_SUBJECTS. */
  maxSubjects?: number
}

interface Layout {
  shards: number
  slots: number
  /** Bytes from one shard's start to the next's. */
  shardBytes: number
  /** Offsets inside a shard, in bytes. */
  tags: number
  lengths: number
  fields: number
  subjects: number
}

function layoutOf (shards: number, slots: number): Layout {
  const tags = SHARD_HEADER_BYTES
  const lengths = tags + 4 * slots
  const fields = align(lengths + 4 * slots, 8)
  const subjects = fields + 8 * SLOT_FIELDS * slots
  return { shards, slots, shardBytes: align(subjects + SUBJECT_BYTES * slots, 64), tags, lengths, fields, subjects }
}

function align (n: number, to: number): number {
  return Math.ceil(n / to) * to
}

/** Makes the shared table, on the main thread, before the workers start. */
export function createSharedLimits ({ maxSubjects = DEFAULT_MAX_SUBJECTS }: SharedLimitsOptions = {}): SharedLimits {
  if (!Number.isSafeInteger(maxSubjects) || maxSubjects < 1) {
    throw new RangeError(`maxSubjects must be a positive integer, not ${maxSubjects}`)
  }
  const shards = Math.ceil(maxSubjects / SHARD_SLOTS)
  const layout = layoutOf(shards, Math.ceil(maxSubjects / shards))
  const buffer = new SharedArrayBuffer(HEADER_BYTES + shards * layout.shardBytes)
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4)
  header[H_VERSION] = LAYOUT_VERSION
  header[H_SEED] = randomInt(2 ** 31)
  header[H_SHARDS] = shards
  header[H_SLOTS] = layout.slots
  return { buffer }
}

/** How many subjects a shared table holds at most: `maxSubjects`, rounded up to shards of one size. */
export function sharedLimitsCapacity ({ buffer }: SharedLimits): number {
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4)
  return int(header, H_SHARDS) * int(header, H_SLOTS)
}

/**
 * Frees every shard lock that the thread `threadId` holds, for the main thread
 * to call when a worker exits, however it ended. Pass the `threadId` read while
 * the worker ran: Node reads it as -1 once the worker has exited.
 */
export function releaseLocksHeldBy ({ buffer }: SharedLimits, threadId: number): number {
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4)
  const layout = layoutOf(int(header, H_SHARDS), int(header, H_SLOTS))
  const words = new Int32Array(buffer)
  const owner = ownerIdOf(threadId)
  let released = 0
  for (let shard = 0; shard < layout.shards; shard++) {
    const lock = (HEADER_BYTES + shard * layout.shardBytes) / 4
    const word = Atomics.load(words, lock)
    if ((word & ~CONTENDED) === owner && Atomics.compareExchange(words, lock, word, 0) === word) {
      Atomics.notify(words, lock)
      released++
    }
  }
  return released
}

/** Owner ids start at 1: 0 is a free lock. */
function ownerIdOf (thread: number): number {
  return thread + 1
}

export class SharedMemoryStore implements RateLimitStore {
  // In-process, as MemoryStore is: operators see one name for limits kept in the process, whatever the number of workers.
  readonly name = 'memory'
  readonly #layout: Layout
  readonly #seed: number
  readonly #words: Int32Array
  readonly #numbers: Float64Array
  readonly #bytes: Uint8Array
  readonly #owner = ownerIdOf(threadId)
  /** The subject's UTF-8, made here rather than per hit: up to 3 bytes a character, so one too long to keep is seen as such. */
  readonly #scratch = new Uint8Array(3 * SUBJECT_BYTES + 3)
  readonly #encoder = new TextEncoder()

  /** `clock` decides, as the in-process store's does, when a subject no longer counts; the windows are read at each hit's `now`. */
  constructor (shared: SharedLimits, readonly clock: () => number = Date.now) {
    const header = new Int32Array(shared.buffer, 0, HEADER_BYTES / 4)
    if (int(header, H_VERSION) !== LAYOUT_VERSION) throw new TypeError('not a table made by createSharedLimits()')
    this.#layout = layoutOf(int(header, H_SHARDS), int(header, H_SLOTS))
    this.#seed = int(header, H_SEED)
    this.#words = new Int32Array(shared.buffer)
    this.#numbers = new Float64Array(shared.buffer)
    this.#bytes = new Uint8Array(shared.buffer)
  }

  async hit (request: HitRequest, now: number): Promise<Decision> {
    const length = this.#encode(request.subject)
    const hash = murmur3(this.#scratch, bytesOf(length), this.#seed)
    const shard = (hash >>> 0) % this.#layout.shards
    const base = HEADER_BYTES + shard * this.#layout.shardBytes
    this.#lock(base / 4)
    try {
      return this.#hitLocked(request, now, base, hash, length)
    } finally {
      this.#unlock(base / 4)
    }
  }

  #hitLocked (request: HitRequest, now: number, base: number, tag: number, length: number): Decision {
    const words = this.#words
    const numbers = this.#numbers
    const tags = (base + this.#layout.tags) / 4
    const lengths = (base + this.#layout.lengths) / 4
    const fields = (base + this.#layout.fields) / 8

    let slot = this.#find(base, tag, length)
    const clock = this.clock()
    // A subject that no longer counts is read as new, as lru-cache reads one past its ttl.
    const found = slot >= 0 && num(numbers, fields + slot * SLOT_FIELDS + F_COUNTS_UNTIL) > clock
    // A look writes nothing, not even the subject's use.
    if (request.charge === false) return found ? decide(numbers, fields + slot * SLOT_FIELDS, request, now) : decide(NOT_KEPT, 0, request, now)

    if (slot < 0) slot = this.#makeRoom(base, clock, now)
    const f = fields + slot * SLOT_FIELDS
    if (!found) {
      // Claimed in an order that a thread stopped half-way leaves the slot empty, never standing for a subject it does not hold.
      words[lengths + slot] = 0
      for (let i = 0; i < SLOT_FIELDS; i++) numbers[f + i] = 0
      this.#bytes.set(this.#scratch.subarray(0, bytesOf(length)), base + this.#layout.subjects + slot * SUBJECT_BYTES)
      words[tags + slot] = tag
      words[lengths + slot] = length
    }

    const decision = decide(numbers, f, request, now)
    // Every charged hit makes the subject the most recently used of its shard, and sets until when it counts.
    numbers[f + F_COUNTS_UNTIL] = countsUntil(numbers, f, now)
    numbers[f + F_LAST_USED] = this.#tick(base)
    return decision
  }

  /** The slot that holds the subject, or -1. */
  #find (base: number, tag: number, length: number): number {
    const words = this.#words
    const tags = (base + this.#layout.tags) / 4
    const lengths = (base + this.#layout.lengths) / 4
    const subjects = base + this.#layout.subjects
    for (let slot = 0; slot < this.#layout.slots; slot++) {
      if (words[tags + slot] !== tag || words[lengths + slot] !== length) continue
      if (sameBytes(this.#bytes, subjects + slot * SUBJECT_BYTES, this.#scratch, bytesOf(length))) return slot
    }
    return -1
  }

  /**
   * A slot for a subject the shard does not hold, chosen as the in-process
   * store makes room: empty, else no longer counting, else the least recently
   * used not banned, else the oldest ban (docs/INTERNALS.md, section "Shared-memory store").
   */
  #makeRoom (base: number, clock: number, now: number): number {
    const words = this.#words
    const numbers = this.#numbers
    const lengths = (base + this.#layout.lengths) / 4
    const fields = (base + this.#layout.fields) / 8
    let oldest = -1
    let oldestUnbanned = -1
    for (let slot = 0; slot < this.#layout.slots; slot++) {
      if (words[lengths + slot] === 0) return slot
      const f = fields + slot * SLOT_FIELDS
      if (num(numbers, f + F_COUNTS_UNTIL) <= clock) return slot
      const used = num(numbers, f + F_LAST_USED)
      if (oldest < 0 || used < num(numbers, fields + oldest * SLOT_FIELDS + F_LAST_USED)) oldest = slot
      if (num(numbers, f + F_BANNED_UNTIL) <= now && (oldestUnbanned < 0 || used < num(numbers, fields + oldestUnbanned * SLOT_FIELDS + F_LAST_USED))) oldestUnbanned = slot
    }
    return oldestUnbanned >= 0 ? oldestUnbanned : oldest
  }

  /** The shard's next use stamp: a count, not a time, so that two uses in one millisecond keep their order. */
  #tick (base: number): number {
    const counter = (base + 8) / 8
    const next = num(this.#numbers, counter) + 1
    this.#numbers[counter] = next
    return next
  }

  #lock (word: number): void {
    const words = this.#words
    const me = this.#owner
    if (Atomics.compareExchange(words, word, 0, me) === 0) return
    for (let i = 0; i < SPINS; i++) {
      if (Atomics.load(words, word) === 0 && Atomics.compareExchange(words, word, 0, me) === 0) return
    }
    // Ulrich Drepper's mutex ("Futexes Are Tricky", 2011): a waiter marks the word contended, and takes the lock as contended, since others may wait too.
    const deadline = performance.now() + GIVE_UP_MS
    for (;;) {
      const seen = Atomics.load(words, word)
      if (seen === 0) {
        if (Atomics.compareExchange(words, word, 0, me | CONTENDED) === 0) return
        continue
      }
      if ((seen & CONTENDED) === 0 && Atomics.compareExchange(words, word, seen, seen | CONTENDED) !== seen) continue
      Atomics.wait(words, word, seen | CONTENDED, WAIT_MS)
      if (performance.now() > deadline) {
        throw new Error(`a rate-limit shard has been locked for over ${GIVE_UP_MS} ms by thread ${(seen & ~CONTENDED) - 1}, which exited without its locks being released`)
      }
    }
  }

  #unlock (word: number): void {
    if ((Atomics.exchange(this.#words, word, 0) & CONTENDED) !== 0) Atomics.notify(this.#words, word, 1)
  }

  /** Puts the subject's bytes in the scratch and answers its length word. */
  #encode (subject: string): number {
    const scratch = this.#scratch
    const n = subject.length
    if (n <= SUBJECT_BYTES) {
      // Subjects are ASCII but for a rare key id: copied here, they skip a call into the runtime that costs more than the rest of the hit's reading.
      let i = 0
      for (; i < n; i++) {
        const c = subject.charCodeAt(i)
        if (c >= 0x80) break
        scratch[i] = c
      }
      if (i === n) return n + 1
      const { written } = this.#encoder.encodeInto(subject, scratch)
      if (written <= SUBJECT_BYTES) return written + 1
    }
    // Copied into the scratch so that the hash and the compare read one kind of array.
    scratch.set(createHash('sha256').update(subject).digest())
    return DIGESTED
  }

  /** The table is shared by the process: always ok, as the in-process store is (full, it forgets as that one does). */
  async health (): Promise<StoreHealth> {
    return { status: 'ok' }
  }

  /** Nothing to close: the buffer lives as long as any thread holds it. */
  async close (): Promise<void> {}
}

/** How many bytes a subject with this length word has. */
function bytesOf (length: number): number {
  return length === DIGESTED ? DIGEST_BYTES : length - 1
}

function sameBytes (table: Uint8Array, offset: number, key: Uint8Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (table[offset + i] !== key[i]) return false
  return true
}

/** MurmurHash3's 32-bit hash (Austin Appleby, public domain): fast on short keys and well mixed, with a seed. */
function murmur3 (bytes: Uint8Array, length: number, seed: number): number {
  let h = seed
  const blocks = length & ~3
  for (let i = 0; i < blocks; i += 4) {
    h ^= mixBlock(byte(bytes, i) | (byte(bytes, i + 1) << 8) | (byte(bytes, i + 2) << 16) | (byte(bytes, i + 3) << 24))
    h = (h << 13) | (h >>> 19)
    h = (Math.imul(h, 5) + 0xe6546b64) | 0
  }
  let tail = 0
  if ((length & 3) >= 3) tail ^= byte(bytes, blocks + 2) << 16
  if ((length & 3) >= 2) tail ^= byte(bytes, blocks + 1) << 8
  if ((length & 3) >= 1) h ^= mixBlock(tail ^ byte(bytes, blocks))
  h ^= length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

function mixBlock (k: number): number {
  k = Math.imul(k, 0xcc9e2d51)
  k = (k << 15) | (k >>> 17)
  return Math.imul(k, 0x1b873593)
}

/** An element at an index known to be inside the array: one function per kind of array, so that each reads one kind only. */
function int (array: Int32Array, index: number): number {
  return array[index] as number
}

function num (array: Float64Array, index: number): number {
  return array[index] as number
}

function byte (array: Uint8Array, index: number): number {
  return array[index] as number
}
