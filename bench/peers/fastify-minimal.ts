// The floor under any Fastify service: routing and a response schema, no
// keys, no database, no log. It answers every GET /v1/pets with the same 20
// animals that the bare node:http server sends.
import { listen, peerApp, Pets } from './common.js'

const PETS = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `Pet ${i + 1}`, categoryId: 1, status: 'available' }))

const app = peerApp()
app.get('/v1/pets', { schema: { response: { 200: Pets } } }, async () => PETS)
await listen(app)
