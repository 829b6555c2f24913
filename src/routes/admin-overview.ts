// The admin API's views of every key at once (docs/KEYS.md: The console): the
// overview the operator console opens on, and every key's requests per
// day. A fixed number of queries each, however many keys there are.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../schemas/typebox.js'
import type { KeyStore, LeakStore, UsageStore } from '../db/storage.js'
import { overview, totalUsage } from '../keys/overview.js'
import { KeyUsageDays, UsageQuery } from '../schemas/key.js'
import { Overview } from '../schemas/overview.js'
import { adminAnswers } from '../schemas/responses.js'
import { ALWAYS, keysOperation } from './admin-keys.js'

interface AdminOverviewRoutesOptions {
  storage: KeyStore & UsageStore & LeakStore
  now: () => number
}

const adminOverviewRoutes: FastifyPluginAsyncTypebox<AdminOverviewRoutesOptions> = async (app, { storage, now }) => {
  app.get('/overview', {
    schema: keysOperation({
      operationId: 'getOverview',
      summary: 'Every key at a glance',
      description: 'Every key\'s requests per UTC day over the last 30 days, the 10 busiest keys today, how many keys there are by state and plan, and what a key may be given (plans and their limits, scopes, roll overlaps). Counts are written by each instance at least every 10 seconds.',
      // It takes no parameters: one sent is refused (400), as on every operation.
      querystring: Type.Object({}, { additionalProperties: false }),
      response: adminAnswers(200, Overview, 'Every key at a glance.', [...ALWAYS, 400])
    })
  }, async () => await overview(storage, now()))

  app.get('/usage', {
    schema: keysOperation({
      operationId: 'getUsage',
      summary: 'Every key\'s requests per day',
      description: 'The requests of every key added up per UTC day, from `from` to `to`, both included (default: the last 30 days), one row per day, zeros included, oldest first.',
      querystring: UsageQuery,
      response: adminAnswers(200, KeyUsageDays, 'Every key\'s requests per day.', [...ALWAYS, 400])
    })
  }, async (request) => await totalUsage(storage, request.query, now()))
}

export default adminOverviewRoutes
