// A store whose listings wait until the test opens them: requests held in
// flight, for the tests of the cap of requests in flight and of shedding.
import type { Storage } from '../../src/db/storage.js'

/** Listings waiting now, and the most that ever waited at once: one count may serve several stores. */
export interface Waits {
  waiting: number
  most: number
}

/** A store whose listings wait until opened, counting how many wait at once (in `waits`, when several stores share one count). */
export function pausedListings (storage: Storage, waits: Waits = { waiting: 0, most: 0 }): { storage: Storage, waiting: () => number, most: () => number, open: () => void } {
  let open = (): void => {}
  const opened = new Promise<void>((resolve) => { open = resolve })
  const paused = new Proxy(storage, {
    get (target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (property !== 'listPetsJson' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value
      return async (...args: unknown[]) => {
        waits.most = Math.max(waits.most, ++waits.waiting)
        await opened
        waits.waiting--
        return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)
      }
    }
  })
  return { storage: paused, waiting: () => waits.waiting, most: () => waits.most, open }
}
