// What the simple peers share: the animal as JSON Schema (Fastify compiles
// it into the response serializer), a first cut of keys and rate limits (a
// bearer token looked up in a Map, one counter per key), and the listening
// line the benchmark reads. Like most first versions, they log nothing per
// request, unless PEER_LOG names a level: then Fastify's own request log is
// on (a line when a request comes, one when it is answered), as a user who
// keeps Fastify's defaults runs it in production.
import { Type } from 'typebox'
import Fastify, { type FastifyInstance } from 'fastify'

export const Pet = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  categoryId: Type.Integer(),
  status: Type.String()
})

export const Pets = Type.Array(Pet)

/** A Fastify app with its request log at PEER_LOG's level (to stdout, which the benchmark keeps in a file), or none. */
export function peerApp (): FastifyInstance {
  const level = process.env.PEER_LOG
  return Fastify({ logger: level === undefined || level === '' ? false : { level } })
}

export function requireKey (app: FastifyInstance, tokens: ReadonlyMap<string, number>): void {
  const used = new Map<number, number>()
  app.addHook('onRequest', async (request, reply) => {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1]
    const key = token === undefined ? undefined : tokens.get(token)
    if (key === undefined) return reply.code(401).send({ code: 'unauthorized', message: 'A valid API key is required.' })
    used.set(key, (used.get(key) ?? 0) + 1)
  })
}

/** Listens on a free loopback port, prints where, and closes on SIGTERM. */
export async function listen (app: FastifyInstance): Promise<void> {
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  process.stdout.write(`listening on ${address}\n`)
  process.once('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}

/** A variable the benchmark sets; the peer cannot start without it. */
export function required (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}
