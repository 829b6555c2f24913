// The client library's types (client/src/generated/openapi.ts) are
// generated from the OpenAPI document and committed. Generated again from
// the document the service serves, they must come out the same: when the
// interface changes, this fails until they are generated again
// (`npm run generate --workspace petstore-client -- URL`, see client/README.md).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { generateTypes, parseDocument } from '../client/scripts/generate-types.js'
import { buildTestApp, type TestApp } from './support/app.js'
import { PROJECT_ROOT } from './support/process.js'

let subject: TestApp

before(async () => { subject = await buildTestApp() })
after(async () => { await subject.close() })

test('When the client\'s types are generated from the document the service serves, then they are the ones committed', async () => {
  // Arrange
  const served = await subject.app.inject({ url: '/v1/openapi.json' })
  const committed = await readFile(join(PROJECT_ROOT, 'client', 'src', 'generated', 'openapi.ts'), 'utf8')

  // Act
  const generated = await generateTypes(parseDocument(served.body))

  // Assert
  assert.equal(served.statusCode, 200)
  assert.ok(generated === committed, 'client/src/generated/openapi.ts no longer matches /v1/openapi.json: generate it again (client/README.md)')
})

test('When the document has int64 properties, then the generated types make them bigint and the client parses them so', async () => {
  // Arrange
  const served = await subject.app.inject({ url: '/v1/openapi.json' })

  // Act
  const generated = await generateTypes(parseDocument(served.body))

  // Assert
  assert.match(generated, /^ {12}id: bigint;$/m)
  assert.match(generated, /^ {12}categoryId: bigint;$/m)
  assert.match(generated, /^ {16}petId: bigint;$/m)
  assert.match(generated, /^export const int64Properties = \["categoryId","id"\] as const$/m)
})

test('When the document has webhooks, then the generated types list their event types, and each event\'s type is its literal', async () => {
  // Arrange
  const served = await subject.app.inject({ url: '/v1/openapi.json' })

  // Act
  const generated = await generateTypes(parseDocument(served.body))

  // Assert
  assert.match(generated, /^export const webhookTypes = \["pet\.created","webhook\.test"\] as const$/m)
  assert.match(generated, /^ {12}type: "pet\.created";$/m)
  assert.match(generated, /^ {16}"application\/json": components\["schemas"\]\["PetCreatedEvent"\];$/m)
})
