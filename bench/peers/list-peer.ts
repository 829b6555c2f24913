// The list a user would write in an afternoon with Fastify and
// better-sqlite3: a key checked against a Map, one counter per key, a page
// of animals by key (`WHERE id > ?`) and a response schema. It opens the
// database the petstore was seeded with, read-only, so both list the same
// animals.
//
// env: PEER_DATABASE (the SQLite file), PEER_TOKEN (the one valid key)
import { Type } from 'typebox'
import { Database } from '../../src/db/sqlite/driver.js'
import { listen, peerApp, Pets, required, requireKey } from './common.js'

const db = new Database(required('PEER_DATABASE'), { readonly: true })
// Category ids past 2^53 come back exact, as bigint, and are written as such.
db.defaultSafeIntegers(true)
const page = db.prepare<[number, number]>('SELECT id, name, category_id AS categoryId, status FROM pets WHERE id > ? ORDER BY id LIMIT ?')

const Query = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  after: Type.Integer({ minimum: 0, default: 0 })
})

const app = peerApp()
requireKey(app, new Map([[required('PEER_TOKEN'), 1]]))
app.get<{ Querystring: { limit: number, after: number } }>('/v1/pets', { schema: { querystring: Query, response: { 200: Pets } } },
  async (request) => page.all(request.query.after, request.query.limit))
await listen(app)
