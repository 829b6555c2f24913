#!/usr/bin/env node
// The memory the index of token hashes (src/keys/lookup.ts) takes on each
// instance at a million keys, set against a Set of the same hashes, and the
// false-positive rate it then gives. Figures quoted in that file's header.
//
// `npm run build && node --expose-gc scripts/key-index-memory.js [KEYS]`
//
// The storage makes each page of rows as it is read, as a database would
// send it, so that nothing but the index holds them afterwards. The filter's
// bits are an ArrayBuffer, counted by V8 outside the heap (`arrayBuffers`),
// so both figures are given.
import { createHash, randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { createKeyLookup } from '../dist/src/keys/lookup.js'

const keys = Number(process.argv[2] ?? 1_000_000)
const probes = 1_000_000
if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc')
  process.exit(2)
}

const hashOf = (id) => createHash('sha256').update(`key-${id}`).digest('hex')
const storage = {
  countTokens: async () => keys,
  listTokenHashes: async (afterId, limit) => {
    const rows = []
    for (let id = afterId + 1; id <= Math.min(keys, afterId + limit); id++) rows.push({ id, tokenHash: hashOf(id) })
    return rows
  },
  findApiKeyByTokenHash: async () => undefined
}

function used () {
  globalThis.gc()
  globalThis.gc()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return { heapUsed, arrayBuffers }
}
const mib = (bytes) => (bytes / 2 ** 20).toFixed(1)
function report (what, before, after) {
  console.log(`${what}: heap +${mib(after.heapUsed - before.heapUsed)} MiB, array buffers +${mib(after.arrayBuffers - before.arrayBuffers)} MiB`)
}

const start = used()
const lookup = createKeyLookup({ storage, environment: 'production' })
const loadStart = performance.now()
await lookup.refresh()
const loadMs = performance.now() - loadStart
const withFilter = used()
report(`Bloom filter of ${keys} keys (loaded in ${(loadMs / 1000).toFixed(1)} s)`, start, withFilter)

let missing = 0
for (let id = 1; id <= keys; id += 97) if (!lookup.mayExist(hashOf(id))) missing++
let positives = 0
const unknown = randomBytes(32 * 10_000)
for (let i = 0; i < probes; i++) {
  if (i % 10_000 === 0) randomBytes(32 * 10_000).copy(unknown)
  if (lookup.mayExist(unknown.toString('hex', (i % 10_000) * 32, (i % 10_000) * 32 + 32))) positives++
}
console.log(`keys said not to exist: ${missing} (must be 0); false positives: ${positives} in ${probes} unknown hashes (${(100 * positives / probes).toFixed(4)} %)`)

const beforeSet = used()
const set = new Set()
for (let id = 1; id <= keys; id++) set.add(hashOf(id))
const withSet = used()
report(`Set of the same ${set.size} hashes`, beforeSet, withSet)
lookup.close()
