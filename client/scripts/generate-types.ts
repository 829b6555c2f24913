// Writes src/generated/openapi.ts, the client's types, from the service's
// OpenAPI document with openapi-typescript:
//
//   npm run generate -- http://127.0.0.1:8080/v1/openapi.json   (a running service)
//   npm run generate -- ./openapi.json                          (a saved copy)
//
// The file is committed, so that the client builds without a service; a test
// of the service (test/client-types.test.ts) generates it again from the
// document the service serves and fails when the two differ.
import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import openapiTS, { astToString, type OpenAPI3, type SchemaObject } from 'openapi-typescript'
import ts from 'typescript'

const BANNER = `// Generated from the service's OpenAPI document by \`npm run generate\`
// (scripts/generate-types.ts). Do not edit: generate it again.
`

const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword)

/**
 * The TypeScript for a document: its types, with every int64 a `bigint`
 * (the client parses them so), the names of the properties that hold
 * int64 values, which the client's JSON parser reads as `bigint`, and the
 * event types of its webhooks, which `verifyWebhook` knows.
 */
export async function generateTypes (document: OpenAPI3): Promise<string> {
  const ast = await openapiTS(document, {
    // Header values arrive as text, whatever their format.
    transform: (schema, { path }) => isBigInt(schema) && path?.includes('/headers/') !== true ? BIGINT : undefined
  })
  const names = [...int64Properties(document)].sort()
  return `${BANNER}
${astToString(ast)}
/** Properties that hold an int64 a double may round: the client reads them as \`bigint\`. */
export const int64Properties = ${JSON.stringify(names)} as const

/** The event types of the document's \`webhooks\`: those \`verifyWebhook\` returns typed. */
export const webhookTypes = ${JSON.stringify(Object.keys(document.webhooks ?? {}).sort())} as const
`
}

/**
 * The names of the properties whose schema is an int64 a double may round,
 * wherever they are. A name that is one in one schema and something else in another
 * cannot be parsed by name, and is refused.
 */
function int64Properties (document: OpenAPI3): Set<string> {
  const int64 = new Set<string>()
  const other = new Set<string>()
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return
    for (const value of Object.values(node)) visit(value)
    const properties = (node as SchemaObject & { properties?: Record<string, SchemaObject> }).properties
    if (typeof properties !== 'object' || properties === null) return
    for (const [name, schema] of Object.entries(properties)) {
      const isInt64 = typeof schema === 'object' && schema !== null && isBigInt(schema)
      ;(isInt64 ? int64 : other).add(name)
    }
  }
  visit(document)
  const both = [...int64].filter((name) => other.has(name))
  if (both.length > 0) throw new Error(`properties that are int64 in one schema and not in another: ${both.join(', ')}`)
  return int64
}

/**
 * An int64 a double may round: a `bigint`. One whose bounds a double holds
 * exactly (Unix seconds, limits) stays a `number`, which is what a caller
 * wants to compute with.
 */
function isBigInt (schema: SchemaObject): boolean {
  if (schema.format !== 'int64') return false
  const { minimum, maximum } = schema as { minimum?: unknown, maximum?: unknown }
  const safe = (bound: unknown): boolean => typeof bound === 'number' && Math.abs(bound) <= Number.MAX_SAFE_INTEGER
  return !(safe(minimum) && safe(maximum))
}

/** The document, from its JSON text. (Its int64 bounds become doubles, which no type shows.) */
export function parseDocument (text: string): OpenAPI3 {
  return JSON.parse(text) as OpenAPI3
}

async function load (source: string): Promise<OpenAPI3> {
  const response = /^https?:\/\//.test(source) ? await fetch(source) : undefined
  if (response !== undefined && !response.ok) throw new Error(`GET ${source}: ${response.status}`)
  return parseDocument(response === undefined ? await readFile(source, 'utf8') : await response.text())
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const source = process.argv[2]
  if (source === undefined) {
    console.error('usage: npm run generate -- URL_OR_FILE_OF_THE_OPENAPI_DOCUMENT')
    process.exit(2)
  }
  const output = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'generated', 'openapi.ts')
  await writeFile(output, await generateTypes(await load(source)))
  console.log(`wrote ${output}`)
}
