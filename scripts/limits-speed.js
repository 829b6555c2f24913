#!/usr/bin/env node
// Microseconds per hit() of the in-process store and of the shared-memory
// store, on one thread, then of the shared-memory store on several worker
// threads at once: the cost that sharing limits across workers adds.
//
// `npm run build && node scripts/limits-speed.js [THREADS]`
//
// Each figure is the best of five runs, every hit awaited as the service
// awaits it. "one subject": every hit on one key; "50,000 subjects": a
// cycle of addresses that all stay in the store; "a flood": a new address
// every hit, so that the store is full and forgets one subject per hit.
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import { MemoryStore } from '../dist/src/limits/memory-store.js'
import { createSharedLimits, SharedMemoryStore } from '../dist/src/limits/shared-memory-store.js'

const threads = Number(process.argv[2] ?? 4)
const HITS = 300_000
const windows = [{ window: 'minute', limit: 1e9 }, { window: 'day', limit: 1e9 }]
const ban = { threshold: 20, seconds: 900 }
const address = (i) => `addr:${(i >>> 24) & 255}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`
const workloads = {
  'one subject': () => 'key:1234',
  '50,000 subjects': (i) => address(i % 50_000),
  'a flood': (i) => address(i)
}

async function run (store, subjectOf, offset) {
  const start = performance.now()
  for (let i = 0; i < HITS; i++) await store.hit({ subject: subjectOf(offset + i), windows, ban }, Date.now())
  return (performance.now() - start) * 1000 / HITS
}

async function best (store, subjectOf) {
  let fastest = Infinity
  for (let r = 0; r < 5; r++) fastest = Math.min(fastest, await run(store, subjectOf, r * HITS))
  return fastest
}

// What the loop itself costs (the subject's string, the clock, the await), the same for both stores.
const nothing = { hit: async () => undefined }
console.log(`Node ${process.version}, ${HITS} hits a run, best of 5 (µs per hit, the loop's own cost included)`)
for (const [name, subjectOf] of Object.entries(workloads)) {
  const memory = new MemoryStore()
  const shared = new SharedMemoryStore(createSharedLimits())
  const loop = await best(nothing, subjectOf)
  const m = await best(memory, subjectOf)
  const s = await best(shared, subjectOf)
  await memory.close()
  console.log(`${name.padEnd(16)} loop alone ${loop.toFixed(3)}  memory ${m.toFixed(3)}  shared-memory ${s.toFixed(3)}`)
}

// Several threads over one table: each reports its own µs per hit while all run.
const moduleUrl = new URL('../dist/src/limits/shared-memory-store.js', import.meta.url).href
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads')
import(${JSON.stringify(moduleUrl)}).then(async ({ SharedMemoryStore }) => {
  const { table, hits, spread, id } = workerData
  const store = new SharedMemoryStore(table)
  const windows = [{ window: 'minute', limit: 1e9 }, { window: 'day', limit: 1e9 }]
  const ban = { threshold: 20, seconds: 900 }
  const start = performance.now()
  for (let i = 0; i < hits; i++) {
    const n = spread ? (id * hits + i) % 50000 : 0
    await store.hit({ subject: spread ? 'addr:10.' + (n >> 8) + '.' + (n & 255) + '.1' : 'key:1234', windows, ban }, Date.now())
  }
  parentPort.postMessage((performance.now() - start) * 1000 / hits)
})`
for (const spread of [false, true]) {
  const table = createSharedLimits()
  const started = performance.now()
  const each = await Promise.all(Array.from({ length: threads }, (_, id) => new Promise((resolve, reject) => {
    const worker = new Worker(workerCode, { eval: true, workerData: { table, hits: HITS, spread, id } })
    worker.once('message', resolve)
    worker.once('error', reject)
  })))
  const wall = (performance.now() - started) * 1000 / (threads * HITS)
  console.log(`${threads} threads, ${spread ? '50,000 subjects' : 'one subject'}: µs per hit in each thread ${each.map((x) => x.toFixed(3)).join(', ')}; wall µs per hit, all threads together ${wall.toFixed(3)}`)
}
