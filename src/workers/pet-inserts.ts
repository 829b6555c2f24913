// Every worker's new animals are committed by the main thread, in one group
// commit for all of them (docs/WORKERS.md, "One writer"). SQLite writes one
// transaction at a time, each with an fsync: workers committing their own
// groups took turns at smaller groups, and each blocked its own event loop
// for every fsync. A worker sends the inserts of one turn of its loop as one
// message, and gets their outcomes back as one.
import type { MessagePort } from 'node:worker_threads'
import type { CreateOnceResult, IdempotencyRecord, NewPetRecord, Storage } from '../db/storage.js'
import { StorageUnavailableError } from '../errors.js'

interface Insert {
  id: number
  pet: NewPetRecord
  idempotency: IdempotencyRecord | undefined
}

/** An error crosses as its message: the worker answers 503 for an unavailable store, 500 for anything else, as it would for its own. */
type Outcome =
  | { id: number, ok: true, result: CreateOnceResult }
  | { id: number, ok: false, unavailable: boolean, message: string }

/** The worker's side: an insert resolves once the main thread has committed it. */
export function sendInserts (port: MessagePort): (pet: NewPetRecord, idempotency: IdempotencyRecord | undefined) => Promise<CreateOnceResult> {
  const waiting = new Map<number, { resolve: (result: CreateOnceResult) => void, reject: (error: Error) => void }>()
  let batch: Insert[] = []
  let nextId = 0
  port.on('message', (outcomes: Outcome[]) => {
    for (const outcome of outcomes) {
      const caller = waiting.get(outcome.id)
      waiting.delete(outcome.id)
      if (outcome.ok) caller?.resolve(outcome.result)
      else caller?.reject(outcome.unavailable ? new StorageUnavailableError(outcome.message) : new Error(outcome.message))
    }
  })
  const send = (): void => {
    port.postMessage(batch)
    batch = []
  }
  return async (pet, idempotency) => await new Promise((resolve, reject) => {
    const id = nextId++
    waiting.set(id, { resolve, reject })
    if (batch.length === 0) setImmediate(send)
    batch.push({ id, pet, idempotency })
  })
}

/** The main thread's side: each batch goes into the store's group commit, and its outcomes back in one message. */
export function receiveInserts (port: MessagePort, storage: Storage): void {
  const failed = (id: number, error: unknown): Outcome =>
    ({ id, ok: false, unavailable: error instanceof StorageUnavailableError, message: error instanceof Error ? error.message : String(error) })
  port.on('message', (batch: Insert[]) => {
    Promise.all(batch.map(async ({ id, pet, idempotency }): Promise<Outcome> => {
      try {
        const result = idempotency === undefined
          ? { created: true as const, pet: await storage.createPet(pet) }
          : await storage.createPetOnce(pet, idempotency)
        return { id, ok: true, result }
      } catch (error) {
        return failed(id, error)
      }
    })).then((outcomes) => { port.postMessage(outcomes) },
      // No insert is left waiting, whatever went wrong.
      (error: unknown) => { port.postMessage(batch.map(({ id }) => failed(id, error))) })
  })
}
