// The durable create a user would write in an afternoon with Fastify and
// better-sqlite3: WAL, synchronous=FULL, and group commit. Requests that
// arrive together are queued and committed in one transaction on the next
// turn of the event loop (one fsync for all of them); each is answered only
// after that commit. A key is checked and counted as in the list peer.
//
// env: PEER_DATABASE (a SQLite file of its own), PEER_TOKEN (the one valid key)
import { Type } from 'typebox'
import { Database } from '../../src/db/sqlite/driver.js'
import { listen, peerApp, Pet, required, requireKey } from './common.js'

interface NewPet { name: string, categoryId: number, status?: string }
interface Waiting { pet: NewPet, resolve: (id: number) => void, reject: (error: unknown) => void }

const db = new Database(required('PEER_DATABASE'))
db.pragma('journal_mode = WAL')
db.pragma('synchronous = FULL')
db.exec(`CREATE TABLE IF NOT EXISTS pets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
  category_id INTEGER NOT NULL, status TEXT NOT NULL)`)
const insert = db.prepare<[string, number, string], { id: number }>('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id')
const commit = db.transaction((pets: readonly NewPet[]) => pets.map((p) => {
  const row = insert.get(p.name, p.categoryId, p.status ?? 'available')
  if (row === undefined) throw new Error('INSERT … RETURNING gave no row')
  return row.id
}))

let queue: Waiting[] = []

function flush (): void {
  const batch = queue
  queue = []
  try {
    const ids = commit(batch.map((w) => w.pet))
    batch.forEach((w, i) => w.resolve(ids[i] as number))
  } catch (error) {
    for (const w of batch) w.reject(error)
  }
}

async function add (pet: NewPet): Promise<number> {
  return await new Promise((resolve, reject) => {
    if (queue.push({ pet, resolve, reject }) === 1) setImmediate(flush)
  })
}

const Body = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  categoryId: Type.Integer({ minimum: 1 }),
  status: Type.Optional(Type.Union([Type.Literal('available'), Type.Literal('pending'), Type.Literal('sold')]))
}, { additionalProperties: false })

const app = peerApp()
requireKey(app, new Map([[required('PEER_TOKEN'), 1]]))
app.post<{ Body: NewPet }>('/v1/pets', { schema: { body: Body, response: { 201: Pet } } }, async (request, reply) => {
  const id = await add(request.body)
  return reply.code(201).send({ id, ...request.body, status: request.body.status ?? 'available' })
})
await listen(app)
