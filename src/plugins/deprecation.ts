// Deprecated operations announce it on every response, errors included:
// Deprecation (RFC 9745), Sunset (RFC 8594) and links to the successor and
// to the docs. From the sunset instant on they answer 410.
import fp from 'fastify-plugin'
import { Errors } from '../errors.js'

interface Deprecation {
  /** When the deprecation was announced. */
  since: Date
  /** When the operation stops working. */
  sunset: Date
  /** The operation to use instead, relative to the base address. */
  successor: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    deprecation?: Deprecation
  }
}

interface DeprecationOptions {
  /** This instance's own address, ending in /v1. */
  baseUrl: () => string
  now: () => number
}

export default fp<DeprecationOptions>(async function deprecation (app, { baseUrl, now }) {
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

  // After authentication and rate limiting, like any other answer.
  app.addHook('preHandler', (request, _reply, done) => {
    const deprecated = request.routeOptions.config.deprecation
    done(deprecated !== undefined && now() >= deprecated.sunset.getTime() ? Errors.gone(deprecated.sunset, deprecated.successor) : undefined)
  })
}, { name: 'deprecation' })
