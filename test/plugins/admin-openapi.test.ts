// The admin API's OpenAPI document (docs/KEYS.md: The admin API), as served at
// /admin/v1/openapi.json: every operation declares each status it can
// answer, with the headers that go with them, and the document passes
// `redocly lint` (recommended rules) with no errors. That every answer of
// the admin API is as this document describes is checked where the
// answers are made (test/routes/admin-keys.test.ts, test/fuzz/admin-inject.test.ts). It
// passes Spectral with the OWASP ruleset too, as the public one does
// (openapi.test.ts).
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { EVENT_TYPES, TEST_EVENT_TYPE } from '../../src/domain.js'
import { buildAdminApp } from '../../src/http/admin.js'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import type { Storage } from '../../src/db/storage.js'
import { bearer } from '../support/fixtures.js'
import { runTool, spectralOwaspErrors } from '../support/lint-tools.js'

const ADMIN_TOKEN = 'adm-7Qf2Lr9xKp4Zt8Wm3Yc6Vn1Bs5Hd0Jg'

/** What each operation can answer: its own success, its refusals, and what any request may meet (no token, an unmet Expect, too many wrong ones, faults). */
const ALWAYS = ['400', '401', '417', '429', '500', '503']
const WITH_BODY = [...ALWAYS, '413', '415']
const STATUSES: Record<string, string[]> = {
  createKey: ['201', ...WITH_BODY],
  listKeys: ['200', ...ALWAYS],
  getKey: ['200', ...ALWAYS, '404'],
  updateKey: ['200', ...WITH_BODY, '404', '409'],
  rollKey: ['201', ...WITH_BODY, '404', '409'],
  revokeKey: ['200', ...WITH_BODY, '404'], // content sent with a DELETE is read as any body, then ignored
  findKeyByToken: ['200', ...WITH_BODY, '404'],
  getKeyUsage: ['200', ...ALWAYS, '404'],
  getUsage: ['200', ...ALWAYS],
  getOverview: ['200', ...ALWAYS],
  listDeprecations: ['200', ...ALWAYS],
  createWebhook: ['201', ...WITH_BODY],
  listWebhooks: ['200', ...ALWAYS],
  getWebhook: ['200', ...ALWAYS, '404'],
  updateWebhook: ['200', ...WITH_BODY, '404'],
  deleteWebhook: ['200', ...WITH_BODY, '404'],
  listWebhookDeliveries: ['200', ...ALWAYS, '404'],
  resendWebhookDelivery: ['202', ...WITH_BODY, '404', '409'],
  testWebhook: ['202', ...WITH_BODY, '404'],
  rollWebhookSecret: ['201', ...WITH_BODY, '404']
}

interface ResponseObject { $ref?: string, description?: string, headers?: Record<string, unknown>, content?: Record<string, unknown> }
interface Operation { operationId: string, security?: unknown[], responses: Record<string, ResponseObject> }
interface Webhook { post: { parameters: Array<{ $ref: string }>, requestBody: { content: Record<string, { schema: { $ref?: string } }> }, responses: Record<string, { description: string }> } }
interface AdminDocument {
  openapi: string
  webhooks?: Record<string, Webhook>
  servers: Array<{ url: string, description?: string, 'x-internal'?: boolean }>
  security?: unknown[]
  paths: Record<string, Record<string, Operation>>
  components: {
    securitySchemes: Record<string, { type: string, scheme?: string }>
    responses?: Record<string, ResponseObject>
    schemas: Record<string, { properties?: Record<string, Record<string, unknown>>, required?: string[] }>
    parameters?: Record<string, { in: string, name: string, required?: boolean }>
  }
}

describe('the admin OpenAPI document', () => {
  let storage: Storage
  let admin: FastifyInstance
  let text: string
  let document: AdminDocument
  let dir: string

  /** A response, its `$ref` to components.responses followed. */
  const resolved = (response: ResponseObject): ResponseObject => {
    if (response.$ref === undefined) return response
    const name = response.$ref.replace('#/components/responses/', '')
    const target = document.components.responses?.[name]
    assert.ok(target !== undefined, `${response.$ref} points to nothing`)
    return target
  }
  const operations = (): Operation[] => Object.values(document.paths).flatMap((item) => Object.values(item))

  before(async () => {
    storage = openSqlite('sqlite::memory:')
    admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage, environment: 'production' } })
    const response = await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    text = response.body
    document = JSON.parse(text) as AdminDocument
    dir = await mkdtemp(join(tmpdir(), 'petstore-admin-openapi-'))
  })

  after(async () => {
    await admin.close()
    await storage.close()
    await rm(dir, { recursive: true, force: true })
  })

  test('When it is read, then it is OpenAPI 3.1, relative to /admin/v1, with the admin operations and the admin token as a bearer scheme', () => {
    assert.match(document.openapi, /^3\.1\.\d+$/)
    assert.deepEqual(document.servers.map((s) => [s.url, s['x-internal']]), [['/admin/v1', true]])
    assert.match(document.servers[0]?.description ?? '', /\bproduction\b/)
    assert.deepEqual(operations().map((o) => o.operationId).sort(), Object.keys(STATUSES).sort())
    assert.deepEqual(Object.values(document.components.securitySchemes).map((s) => [s.type, s.scheme]), [['http', 'bearer']])
    assert.ok((document.security ?? []).length > 0, 'the document does not say the admin token is needed')
  })

  test('When an operation is read, then it declares every status it can answer, and no other', () => {
    for (const operation of operations()) {
      assert.deepEqual(Object.keys(operation.responses).sort(), (STATUSES[operation.operationId] ?? []).sort(), operation.operationId)
    }
  })

  test('When an operation\'s answers are read, then 401 says WWW-Authenticate, 429 Retry-After, and a page of keys Link', () => {
    for (const operation of operations()) {
      const responses = operation.responses
      assert.ok(resolved(responses['401'] ?? {}).headers?.['WWW-Authenticate'], `${operation.operationId} 401 lacks WWW-Authenticate`)
      assert.ok(resolved(responses['429'] ?? {}).headers?.['Retry-After'], `${operation.operationId} 429 lacks Retry-After`)
      for (const [status, response] of Object.entries(responses)) {
        assert.ok(resolved(response).content?.['application/json'], `${operation.operationId} ${status} has no JSON body`)
      }
    }
    const listKeys = operations().find((o) => o.operationId === 'listKeys')
    assert.ok(resolved(listKeys?.responses['200'] ?? {}).headers?.Link, 'listKeys 200 lacks Link')
  })

  test('When an operation\'s answers are read, then each 2xx and 4xx documents the X-RateLimit headers', () => {
    for (const operation of operations()) {
      for (const [status, response] of Object.entries(operation.responses).filter(([code]) => /^[24]/.test(code))) {
        const headers = Object.keys(resolved(response).headers ?? {})
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          assert.ok(headers.includes(name), `${operation.operationId} ${status} lacks ${name}`)
        }
      }
    }
  })

  test('When the public API\'s codes are compared, then the admin-only codes are listed here', () => {
    assert.match(text, /"invalid_admin_token"/)
    assert.match(text, /"key_revoked"/)
  })

  test('When its codes are read, then overloaded is not among them: the admin API is never shed', () => {
    assert.doesNotMatch(text, /overloaded/)
  })

  test('When the keys\' schemas are read, then concurrency is an integer from 1 to 10000: in every key, and optional when a key is made or changed, where null is the plan\'s', () => {
    const schemas = document.components.schemas
    const bounds = { minimum: 1, maximum: 10_000, format: 'int32' }
    const concurrency = (name: string): Record<string, unknown> => {
      const { type, minimum, maximum, format } = schemas[name]?.properties?.['concurrency'] ?? {}
      return { type, minimum, maximum, format }
    }

    for (const name of ['Key', 'KeyWithToken', 'FoundKey']) {
      assert.deepEqual(concurrency(name), { type: 'integer', ...bounds }, name)
      assert.ok(schemas[name]?.required?.includes('concurrency'), `${name} may leave concurrency out`)
    }
    assert.deepEqual(concurrency('NewKey'), { type: 'integer', ...bounds })
    assert.deepEqual(concurrency('KeyChanges'), { type: ['integer', 'null'], ...bounds })
    assert.ok(!(schemas['NewKey']?.required ?? []).includes('concurrency'))
    assert.ok(!(schemas['KeyChanges']?.required ?? []).includes('concurrency'))
  })

  test('When its webhooks are read, then every event type has one: a POST with the three signature headers, its event as a named body, and 2XX as success', () => {
    // Arrange
    const data = (name: string): unknown => document.components.schemas[name]?.properties?.['data']
    const expected = [...EVENT_TYPES, TEST_EVENT_TYPE].sort()

    // Act
    const types = Object.keys(document.webhooks ?? {}).sort()

    // Assert
    assert.deepEqual(types, expected)
    for (const type of types) {
      const post = document.webhooks?.[type]?.post
      assert.ok(post, type)
      const ref = post.requestBody.content['application/json']?.schema.$ref ?? ''
      assert.match(ref, /^#\/components\/schemas\/[A-Za-z]+Event$/, type)
      const name = ref.replace('#/components/schemas/', '')
      assert.deepEqual(document.components.schemas[name]?.properties?.['type'], { type: 'string', description: 'The event\'s type.', enum: [type] }, type)
      assert.deepEqual(document.components.schemas[name]?.required, ['type', 'timestamp', 'data'], type)
      assert.deepEqual(post.parameters.map((p) => document.components.parameters?.[p.$ref.replace('#/components/parameters/', '')]?.name),
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'], type)
      assert.deepEqual(Object.keys(post.responses).sort(), ['2XX', 'default'], type)
    }
    // The data are the APIs' own schemas, by reference: the Pet, the admin API's Key.
    assert.deepEqual(data('PetCreatedEvent'), { $ref: '#/components/schemas/Pet' })
    for (const type of EVENT_TYPES.filter((t) => t.startsWith('key.'))) {
      const name = `${type.split('.').map((w) => `${w.charAt(0).toUpperCase()}${w.slice(1)}`).join('')}Event`
      assert.deepEqual(data(name), { $ref: '#/components/schemas/Key' }, type)
    }
    assert.deepEqual(data('QuotaWarningEvent'), { $ref: '#/components/schemas/QuotaEventData' })
    assert.deepEqual(document.components.schemas['QuotaEventData']?.properties?.['key'], { $ref: '#/components/schemas/Key' })
    assert.deepEqual(data('WebhookTestEvent'), { $ref: '#/components/schemas/WebhookTestData' })
  })

  test('When the events\' Pet is read, then its int64 bounds are written exactly, never as a rounded double', () => {
    assert.match(text, /"maximum":9223372036854775807[,}]/)
    assert.doesNotMatch(text, /922337203685477580[89]|9\.22\d*e\+?18/i)
  })

  test('When redocly lint (recommended) reads it, then it finds no errors', async (t) => {
    await writeFile(join(dir, 'openapi.json'), text)
    await writeFile(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n')
    const result = await runTool('redocly',
      ['lint', 'openapi.json', '--config', 'redocly.yaml', '--format', 'json'], dir)
    const report = JSON.parse(result.stdout) as { totals: { errors: number, warnings: number }, problems: Array<{ severity: string, ruleId: string, message: string }> }
    const errors = report.problems.filter((p) => p.severity === 'error')
    const warnings = report.problems.filter((p) => p.severity !== 'error')
    t.diagnostic(`redocly lint: ${report.totals.errors} errors, ${report.totals.warnings} warnings${warnings.map((w) => `\n  ${w.ruleId}: ${w.message}`).join('')}`)
    assert.deepEqual(errors, [], `redocly lint: ${result.stderr}`)
    assert.equal(report.totals.errors, 0)
    assert.equal(result.code, 0, result.stderr)
  })

  test('When Spectral with the OWASP ruleset reads it, then it finds no errors (regression: 23, the rate-limit headers and the server\'s audience and environment)', async () => {
    await writeFile(join(dir, 'openapi.json'), text)
    const { errors, run: result } = await spectralOwaspErrors(dir)
    assert.deepEqual(errors, [], `spectral: ${result.stderr}`)
    assert.equal(result.code, 0, result.stderr)
  })
})
