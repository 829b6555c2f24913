// The admin API's view of who still calls the deprecated operations
// (docs/OPERATING.md: The deprecated operation's callers), from keys/deprecated-callers.ts
// as `petstore keys list --calls-deprecated` reads it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../schemas/typebox.js'
import type { LeakStore, UsageStore } from '../db/storage.js'
import { deprecatedCallers } from '../keys/deprecated-callers.js'
import { DeprecatedOperations } from '../schemas/deprecations.js'
import { adminAnswers } from '../schemas/responses.js'
import { ALWAYS, keysOperation } from './admin-keys.js'

interface AdminDeprecationRoutesOptions {
  storage: UsageStore & LeakStore
  now: () => number
}

const adminDeprecationRoutes: FastifyPluginAsyncTypebox<AdminDeprecationRoutesOptions> = async (app, { storage, now }) => {
  app.get('/deprecations', {
    schema: keysOperation({
      operationId: 'listDeprecations',
      summary: 'Who still calls the deprecated operations',
      description: 'Each deprecated operation of the public API, its sunset, and the keys that called it in the last 30 UTC days with their calls and last call: the clients to reach before the sunset. Counts are written by each instance at least every 10 seconds.',
      // It takes no parameters: one sent is refused (400), as on every operation.
      querystring: Type.Object({}, { additionalProperties: false }),
      response: adminAnswers(200, DeprecatedOperations, 'Every deprecated operation and its callers.', [...ALWAYS, 400])
    })
  }, async () => await deprecatedCallers(storage, now()))
}

export default adminDeprecationRoutes
