// GET /v1/rate_limit: where the caller's key stands, without spending any
// of its quota (docs/API.md: Rate limits). The gate has looked (its route says
// `spendsQuota: false`) and left what it saw on the request; the handler
// only writes it out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Errors } from '../errors.js'
import { callerOf, gateStatuses } from '../plugins/gate.js'
import { RateLimitStatus } from '../schemas/rate-limit.js'
import { RATE_LIMIT_HEADERS, errorResponses, withHeaders } from '../schemas/responses.js'

/** Any key may ask, whatever its scopes: no 403. */
const STATUSES = [...gateStatuses({ scoped: false }), 500]

const rateLimitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/rate_limit', {
    config: { spendsQuota: false },
    schema: {
      operationId: 'getRateLimit',
      summary: 'Where my key stands',
      description: 'The key\'s quota in each window and any ban, as the rate-limit headers say it. Asking spends none of the quota, and answers 200 also when the quota is spent or the key is banned; it has a cap of its own, 600 a minute per key.',
      tags: ['limits'],
      response: {
        200: withHeaders(RateLimitStatus, 'Where the key stands.', RATE_LIMIT_HEADERS),
        ...errorResponses(STATUSES, RATE_LIMIT_HEADERS)
      }
    }
  }, async (request) => {
    const { key } = callerOf(request)
    const standing = request.standing
    if (standing === undefined) throw Errors.internal()
    return {
      plan: key.plan,
      limits: standing.windows.map(({ window, limit, remaining, resetAt }) => ({ window, limit, remaining, reset: Math.ceil(resetAt / 1000) })),
      bannedUntil: standing.outcome === 'banned' ? Math.ceil(standing.bannedUntil / 1000) : null
    }
  })
}

export default rateLimitRoutes
