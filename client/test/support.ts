// Arrangements shared by the client's tests: a `fetch` that answers from a
// script and remembers what it was sent, and a way to run a call to its end
// on node:test's fake timers.
import { mock } from 'node:test'
import { PetstoreClient, type PetstoreClientOptions } from 'petstore-client'

export const BASE_URL = 'https://api.petstore.example/v1'
export const API_KEY = 'pet_live_test'

/** A request as the fake service received it, and when, by the fake clock. */
export interface Received {
  method: string
  url: URL
  headers: Headers
  body: string
  at: number
}

type Answer = Response | Error

/**
 * A `fetch` that gives the n-th request `answer(request, n)` (a Response, or
 * an Error to throw as a network error is thrown), and keeps every request.
 */
export function fakeFetch (answer: (request: Received, index: number) => Answer): { fetch: (request: Request) => Promise<Response>, received: Received[] } {
  const received: Received[] = []
  return {
    received,
    fetch: async (request) => {
      const entry = { method: request.method, url: new URL(request.url), headers: request.headers, body: await request.text(), at: Date.now() }
      received.push(entry)
      const result = answer(entry, received.length - 1)
      if (result instanceof Error) throw result
      return result
    }
  }
}

/** A JSON response, its body written as given, so that big integers stay exact. */
export function jsonResponse (status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } })
}

/** The service's Error body. */
export function errorResponse (status: number, code: string, headers: Record<string, string> = {}): Response {
  return jsonResponse(status, JSON.stringify({ code, message: `${code} happened`, status }), headers)
}

export const PET_JSON = '{"id":1,"name":"Rex","categoryId":1,"status":"available"}'

export function newClient (fetch: (request: Request) => Promise<Response>, options: Partial<PetstoreClientOptions> = {}): PetstoreClient {
  return new PetstoreClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, onDeprecation: () => {}, ...options })
}

/** Fake setTimeout and Date, from the Unix epoch. Call `mock.timers.reset()` after. */
export function useFakeTimers (): void {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
}

/** Lets every pending promise callback run (setImmediate is not faked). */
export async function flush (): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}

/**
 * Runs a call to its end on the fake clock: whenever it is waiting on a
 * timer, the clock jumps to that timer. The fake fetch answers at once, so
 * that a call is only ever waiting on a timer or done.
 */
export async function settle<T> (call: Promise<T>): Promise<T> {
  const state = { done: false }
  const finished = call.finally(() => { state.done = true })
  finished.catch(() => {})
  for (let i = 0; i < 10_000 && !state.done; i++) {
    await flush()
    if (!state.done) mock.timers.runAll()
  }
  return await finished
}
