// Fastify's router answers 404 to a known path with a method it has no route
// for; HTTP says 405, with the methods the path has (RFC 9110 §15.5.6). So
// the router is taught every method Node's HTTP parser accepts, and each
// path of the scope gets one more route, for every method it lacks, that
// answers 405 with Allow. The paths are the scope's own routes', collected
// as they are added. The 405 is a route-level preParsing hook, which Fastify
// runs after every onRequest hook and every preParsing hook of the scope:
// after the gate (plugins/gate.ts) and the framing check
// (plugins/framing.ts), so a request is identified, counted and refused
// before it learns which methods a path has, and answered before any body
// is read.
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { Errors } from '../errors.js'

/** Makes every method that Node's parser accepts (PROPFIND, LOCK, …) routable, so that none falls through to the 404 handler. */
export function routeEveryMethod (app: FastifyInstance): void {
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method)
  }
}

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
