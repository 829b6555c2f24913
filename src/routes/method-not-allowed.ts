// A known path with another method gets 405 with Allow (RFC 9110 §15.5.6),
// where Fastify's router would say 404: each path gets one more route, for the
// methods it lacks, answering in a route-level preParsing hook, after the gate
// and the framing check (docs/INTERNALS.md, section "405").
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { Errors } from '../errors.js'

/** The paths (prefix included) of every route added to a scope from now on. */
export function collectPaths (app: FastifyInstance): ReadonlySet<string> {
  const paths = new Set<string>()
  app.addHook('onRoute', (route) => { paths.add(route.url) })
  return paths
}

/** The 405 routes of the paths collected, registered when this plugin loads: after the scope's own routes. */
const methodNotAllowedRoutes: FastifyPluginAsync<{ paths: ReadonlySet<string> }> = async (app, { paths }) => {
  for (const url of [...paths]) {
    const routed = (method: string): boolean => app.hasRoute({ url, method })
    const allow = app.supportedMethods.filter(routed).sort().join(', ')
    const refuse = async (request: FastifyRequest): Promise<never> => { throw Errors.methodNotAllowed(request.method, allow) }
    app.route({
      method: app.supportedMethods.filter((method) => !routed(method)),
      // Full paths: this plugin is registered without a prefix of its own.
      url: url.slice(app.prefix.length),
      schema: { hide: true },
      preParsing: refuse,
      handler: refuse
    })
  }
  // An OPTIONS to a path the scope does not have (its prefix alone included) goes to its not-found
  // handler, after the scope's hooks (the gate), as every other method
  // does: @fastify/cors's catch-all OPTIONS route, outside the scope,
  // would take it otherwise. Registered last, so it is no path of its own.
  const notFound = (_request: FastifyRequest, reply: FastifyReply): void => { reply.callNotFound() }
  app.options('', { schema: { hide: true } }, notFound)
  app.options('/*', { schema: { hide: true } }, notFound)
}

export default methodNotAllowedRoutes
