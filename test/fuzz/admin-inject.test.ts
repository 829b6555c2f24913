// Generated requests for the admin API (docs/KEYS.md: The admin API), valid and
// invalid, built from its own OpenAPI document and sent through `inject`
// on both configurations: none gets a 5xx, and every answer is as that
// document describes it (status, headers, body) and as the rules of the
// public fuzz test have it (the Error body; a Link on the listener's own
// paths). A few hundred requests in `npm test`, ten times more under
// `npm run test:soak`; the seed is printed, and PETSTORE_FUZZ_SEED replays it.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { buildAdminApp } from '../../src/http/admin.js'
import { CONFIGURATIONS, buildTestApp } from '../support/app.js'
import { bearer } from '../support/fixtures.js'
import { OpenApiChecker } from '../support/openapi-check.js'
import { iterations } from '../support/soak.js'
import { adminRequestSpec, materializeAdmin, type AdminRunState, type AdminSpec } from './admin-requests.js'
import { Figures, KEEP_GOING, fuzzParameters, injectSent, judge } from './harness.js'
import type { SentRequest } from './requests.js'

const ADMIN_TOKEN = 'adm-fuzz-4Rt7Yp2Lx9Qw3Zk8Vn5Bm1Hc6Jd0Gs'

/** What the admin API did, against what was asked: a page within its limit and in id order; a key made with the plan sent. */
function outcomeProblems (spec: AdminSpec, sent: SentRequest, status: number, body: string): string[] {
  const where = `${sent.method} ${sent.url.slice(0, 120)} → ${status}`
  if (spec.operation === 'listKeys' && status === 200 && sent.method === 'GET') {
    const limit = Number(new URLSearchParams(sent.url.split('?')[1] ?? '').get('limit') ?? 20)
    const ids = (JSON.parse(body) as Array<{ id: number }>).map((key) => key.id)
    if (ids.length > limit) return [`${where}: ${ids.length} keys for limit ${limit}`]
    if (ids.some((id, i) => i > 0 && id <= (ids[i - 1] as number))) return [`${where}: not in id order`]
  }
  if (spec.operation === 'createKey' && status === 201 && typeof sent.payload === 'string') {
    const asked = (JSON.parse(sent.payload) as { plan?: string }).plan
    const made = (JSON.parse(body) as { plan?: string }).plan
    if (asked !== made) return [`${where}: made a ${String(made)} key for plan ${String(asked)}`]
  }
  return []
}

async function fuzz (admin: FastifyInstance, state: AdminRunState, advance: (ms: number) => void, from: number, numRuns: number, title: string, diagnostic: (message: string) => void): Promise<Figures> {
  const document = await admin.inject({ url: '/admin/v1/openapi.json', headers: bearer(ADMIN_TOKEN) })
  assert.equal(document.statusCode, 200)
  const checker = new OpenApiChecker(document.body)
  const figures = new Figures()
  const maxParamLength = admin.initialConfig.routerOptions?.maxParamLength ?? 100
  const parameters = fuzzParameters<[AdminSpec]>(numRuns)
  diagnostic(`${title}: seed ${parameters.seed} (replay: PETSTORE_FUZZ_SEED=${parameters.seed})`)
  const property = fc.asyncProperty(adminRequestSpec(JSON.parse(document.body) as Record<string, unknown>, from), async (spec) => {
    advance(spec.wait)
    const sent = materializeAdmin(spec, state)
    const { response, received } = await injectSent(admin, sent)
    const verdict = judge(checker, sent, received, { maxParamLength, baseUrl: '/admin/v1' })
    verdict.problems.push(...outcomeProblems(spec, sent, response.statusCode, response.body))
    figures.record(verdict, response.statusCode)
    // What the answer teaches the run: ids and tokens of keys made or rolled, cursors.
    if (response.statusCode === 201) {
      const key = response.json() as { id: number, token: string }
      if (state.ids.length < 500) state.ids.push(String(key.id))
      if (state.tokens.length < 500) state.tokens.push(key.token)
    }
    const cursor = /[?&]cursor=([^&>]+)/.exec(String(response.headers.link ?? ''))?.[1]
    if (cursor !== undefined && state.cursors.length < 200) state.cursors.push(decodeURIComponent(cursor))
    if (verdict.problems.length > 0 && !KEEP_GOING) throw new Error(verdict.problems.join('\n'))
  })
  try {
    await fc.assert(property, parameters)
  } finally {
    diagnostic(figures.summary(title, parameters.seed))
  }
  return figures
}

describe('fuzzing the admin API through inject', () => {
  for (const configuration of CONFIGURATIONS) {
    // As the public fuzz test: the scaled-out configuration runs fewer, since what differs there is storage;
    // enough that each of the 21 operations, and a 201, comes up (at 150, about a seed in a hundred saw no 201).
    const runs = configuration.backend === 'sqlite' ? iterations(500, 5000) : iterations(300, 3000)
    test(`When ${runs} generated requests reach the admin API (${configuration.name}), then none gets a 5xx and every answer is as the admin OpenAPI document describes it`, async (t) => {
      const subject = await buildTestApp({}, configuration)
      const admin = await buildAdminApp({ api: { token: ADMIN_TOKEN, storage: subject.storage, environment: 'production' }, now: subject.clock.now })
      try {
        const state: AdminRunState = { adminToken: ADMIN_TOKEN, apiKey: await subject.newKey('pro'), ids: [], tokens: [], cursors: [] }
        const figures = await fuzz(admin, state, (ms) => { subject.clock.advance(ms) }, subject.clock.now(), runs, configuration.name, (message) => { t.diagnostic(message) })
        assert.equal(figures.serverErrors, 0)
        assert.equal(figures.failures, 0)
        for (const operation of ['createKey', 'listKeys', 'getKey', 'updateKey', 'rollKey', 'revokeKey', 'findKeyByToken', 'no operation']) {
          assert.ok((figures.operations.get(operation) ?? 0) > 0, `${operation} was never reached`)
        }
        for (const status of [200, 201, 400, 401, 404]) assert.ok((figures.statuses.get(status) ?? 0) > 0, `no ${status} seen`)
      } finally {
        await admin.close()
        await subject.close()
      }
    })
  }
})
