// The baseline: what plain `node:http` does on this machine, in this run.
// It answers every GET with the same small page of 20 animals, and every
// POST by reading and parsing the JSON body and answering 201, so that the
// petstore's numbers can be read as ratios of it. No routing, no checks.
import { createServer } from 'node:http'

const PETS = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({
  id: i + 1, name: `Pet ${i + 1}`, categoryId: 1, status: 'available'
})))

let nextId = 1

const server = createServer((request, response) => {
  if (request.method !== 'POST') {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
    response.end(PETS)
    return
  }
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => { chunks.push(chunk) })
  request.on('end', () => {
    let body: { name?: unknown, categoryId?: unknown }
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body
    } catch {
      response.writeHead(400).end()
      return
    }
    response.writeHead(201, { 'content-type': 'application/json; charset=utf-8' })
    response.end(JSON.stringify({ id: nextId++, name: body.name, categoryId: body.categoryId, status: 'available' }))
  })
})

server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the baseline server has no TCP address')
  // The same line the petstore prints, so one reader finds the port of both.
  process.stdout.write(`listening on http://${address.address}:${address.port}\n`)
})
