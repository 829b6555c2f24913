// A worker thread for the in-flight table's tests: it takes and gives back
// slots of one key as fast as it can, counting in a shared word how many are
// held at once, as the service's workers hold them for their requests.
import { parentPort, workerData } from 'node:worker_threads'
import { InFlight, type InFlightTable } from '../../src/limits/in-flight.js'

export interface InFlightOrders {
  table: InFlightTable
  column: number
  key: number
  cap: number
  /** Slots to take, one after another, several at once. */
  rounds: number
  /** Slots this worker asks for at once. */
  parallel: number
  /** Word 0: slots held now by every worker; word 1: the most ever held at once. */
  held: SharedArrayBuffer
  /** The work starts when the test sets word 0 to 1, so that every worker starts at once. */
  gate: SharedArrayBuffer
}

export type InFlightMessage = { type: 'ready' } | { type: 'done', taken: number, refused: number }

const orders = workerData as InFlightOrders
const port = parentPort
if (port === null) throw new Error('run as a worker thread')
const send = (message: InFlightMessage): void => { port.postMessage(message) }

const inFlight = new InFlight(orders.table, orders.column)
const held = new Int32Array(orders.held)
const gate = new Int32Array(orders.gate)
let taken = 0
let refused = 0
let left = orders.rounds
send({ type: 'ready' })
// Blocks this thread alone: a wait that left its event loop empty would end the thread.
Atomics.wait(gate, 0, 0)
await Promise.all(Array.from({ length: orders.parallel }, async () => {
  while (left-- > 0) {
    const release = await inFlight.acquire(orders.key, orders.cap, 50)
    if (release === undefined) {
      refused++
      continue
    }
    taken++
    const now = Atomics.add(held, 0, 1) + 1
    for (let most = Atomics.load(held, 1); now > most; most = Atomics.load(held, 1)) Atomics.compareExchange(held, 1, most, now)
    // Held across a turn of the event loop, as a request is.
    await new Promise((resolve) => setImmediate(resolve))
    Atomics.sub(held, 0, 1)
    release()
  }
}))
send({ type: 'done', taken, refused })
