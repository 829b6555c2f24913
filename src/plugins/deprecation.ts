// Deprecated operations announce it on every response, errors included:
// Deprecation (RFC 9745), Sunset (RFC 8594) and links to the successor and
// to the docs. From the sunset instant on they answer 410, and during a
// brownout too (docs/API.md: The deprecated operation). Each call of a
// deprecated operation with a valid key is told, for the operators' list of
// callers (docs/OPERATING.md: The deprecated operation's callers).
import fp from 'fastify-plugin'
import { Errors } from '../errors.js'
import { DEPRECATED_OPERATIONS, brownoutAt, type Brownout, type Deprecation } from '../deprecations.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** One of DEPRECATED_OPERATIONS: the route's schema must say `deprecated: true` and the same operationId. */
    deprecation?: Deprecation
  }
}

interface DeprecationOptions {
  /** This instance's own address, ending in /v1. */
  baseUrl: () => string
  now: () => number
  /** DEPRECATION_BROWNOUTS, sorted by start. */
  brownouts?: readonly Brownout[]
  /** Told of each call of a deprecated operation by a valid key that reached the operation; must cost O(1). */
  onCalled?: (keyId: number, operationId: string) => void
}

export default fp<DeprecationOptions>(async function deprecation (app, { baseUrl, now, brownouts = [], onCalled }) {
  // The admin API and the CLI list DEPRECATED_OPERATIONS: a route deprecated in
  // its schema alone, or with a deprecation not in that list, would be missing there.
  app.addHook('onRoute', (route) => {
    const deprecated = route.config?.deprecation
    const schema = route.schema as { deprecated?: boolean, operationId?: string } | undefined
    if (deprecated === undefined && schema?.deprecated !== true) return
    if (deprecated === undefined || schema?.deprecated !== true || schema.operationId !== deprecated.operationId || !DEPRECATED_OPERATIONS.includes(deprecated)) {
      throw new Error(`${route.method.toString()} ${route.url}: a deprecated operation needs config.deprecation from DEPRECATED_OPERATIONS, schema.deprecated and the same operationId`)
    }
  })

  // The headers are the same on every answer of an operation; they are
  // written once (the address is known only once the instance listens).
  const written = new WeakMap<Deprecation, { base: string, headers: Record<string, string> }>()
  const headersOf = (deprecated: Deprecation): Record<string, string> => {
    const base = baseUrl()
    const known = written.get(deprecated)
    if (known?.base === base) return known.headers
    const headers = {
      deprecation: `@${Math.floor(deprecated.since.getTime() / 1000)}`,
      sunset: deprecated.sunset.toUTCString(),
      link: `<${base}${deprecated.successor}>; rel="successor-version", <${base}/docs>; rel="deprecation"; type="text/html"`
    }
    written.set(deprecated, { base, headers })
    return headers
  }

  // Callback hooks: nearly every request has nothing to do here, and need not pay for a promise.
  app.addHook('onRequest', (request, reply, done) => {
    const deprecated = request.routeOptions.config.deprecation
    if (deprecated !== undefined) reply.headers(headersOf(deprecated))
    done()
  })

  // After authentication, rate limiting and validation: a call is counted
  // when it reaches the operation, whatever it answers (404 and 410 too); a
  // request refused before (401, 403, 429, 400) is not.
  app.addHook('preHandler', (request, _reply, done) => {
    const deprecated = request.routeOptions.config.deprecation
    if (deprecated === undefined) {
      done()
      return
    }
    const key = request.access?.key
    if (key !== undefined) onCalled?.(key.id, deprecated.operationId)
    const at = now()
    if (at >= deprecated.sunset.getTime()) {
      done(Errors.gone(deprecated.sunset, deprecated.successor))
      return
    }
    const brownout = brownoutAt(brownouts, at)
    done(brownout === undefined ? undefined : Errors.brownout(brownout, deprecated.sunset, deprecated.successor, Math.max(1, Math.ceil((brownout.end - at) / 1000))))
  })
}, { name: 'deprecation' })
