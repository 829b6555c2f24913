// Written by hand: its input is already a SHA-256, so a filter is a bit array
// and the arithmetic below (docs/INTERNALS.md, section "Key lookup").
import { hash } from 'node:crypto'

const SHA256_HEX = /^[0-9a-f]{64}$/

/**
 * A Bloom filter over SHA-256 hex digests, its k bit positions from the digest's first
 * 64 bits by enhanced double hashing (https://en.wikipedia.org/wiki/Double_hashing#Enhanced_double_hashing).
 * Any other string is hashed first, so the filter never says no for an item it was given.
 */
export class BloomFilter {
  readonly capacity: number
  readonly #bits: Uint32Array
  readonly #size: number
  readonly #hashes: number

  constructor (capacity: number, falsePositiveRate: number) {
    this.capacity = capacity
    // m = -n ln p / (ln 2)², k = (m / n) ln 2: https://en.wikipedia.org/wiki/Bloom_filter#Optimal_number_of_hash_functions
    const words = Math.ceil(-capacity * Math.log(falsePositiveRate) / Math.LN2 ** 2 / 32)
    this.#bits = new Uint32Array(words)
    this.#size = words * 32
    this.#hashes = Math.max(1, Math.round(this.#size / capacity * Math.LN2))
  }

  /** The filter's own memory, in bytes. */
  get bytes (): number {
    return this.#bits.byteLength
  }

  add (item: string): void {
    this.#each(item, (word, mask) => { this.#bits[word] = (this.#bits[word] as number) | mask })
  }

  has (item: string): boolean {
    let all = true
    this.#each(item, (word, mask) => { if (((this.#bits[word] as number) & mask) === 0) all = false })
    return all
  }

  #each (item: string, visit: (word: number, mask: number) => void): void {
    const digest = SHA256_HEX.test(item) ? item : hash('sha256', item)
    // Below 2^32 each, so every sum below stays an exact integer.
    let a = Number.parseInt(digest.slice(0, 8), 16) % this.#size
    let b = Number.parseInt(digest.slice(8, 16), 16) % this.#size
    for (let i = 0; i < this.#hashes; i++) {
      visit(a >>> 5, 1 << (a & 31))
      a = (a + b) % this.#size
      b = (b + i + 1) % this.#size
    }
  }
}
