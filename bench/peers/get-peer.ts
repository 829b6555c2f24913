// The list peer's twin for one animal: a key checked against a Map, one
// counter per key, one animal read by id, and a response schema. It opens
// the database the petstore was seeded with, read-only.
//
// env: PEER_DATABASE (the SQLite file), PEER_TOKEN (the one valid key)
import { Type } from 'typebox'
import { Database } from '../../src/db/sqlite/driver.js'
import { listen, peerApp, Pet, required, requireKey } from './common.js'

const db = new Database(required('PEER_DATABASE'), { readonly: true })
// Category ids past 2^53 come back exact, as bigint, and are written as such.
db.defaultSafeIntegers(true)
const one = db.prepare<[number]>('SELECT id, name, category_id AS categoryId, status FROM pets WHERE id = ?')

const Params = Type.Object({ petId: Type.Integer({ minimum: 1 }) })
const NotFound = Type.Object({ code: Type.String(), message: Type.String() })

const app = peerApp()
requireKey(app, new Map([[required('PEER_TOKEN'), 1]]))
app.get<{ Params: { petId: number } }>('/v1/pets/:petId', { schema: { params: Params, response: { 200: Pet, 404: NotFound } } },
  async (request, reply) => one.get(request.params.petId) ?? reply.code(404).send({ code: 'not_found', message: 'No such animal.' }))
await listen(app)
