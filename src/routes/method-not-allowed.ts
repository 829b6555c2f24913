// Fastify's router answers 404 to a known path with a method it has no route
// for; HTTP says 405, with the methods the path has (RFC 9110 §15.5.6). So
// the router is taught every method Node's HTTP parser accepts, and each API
// path gets one more route, for every method it lacks, that answers 405 with
// Allow. Its onRequest hook runs after the gate (access.ts): a request is
// identified, counted and refused before it learns which methods a path has,
// and answered before any body is read.
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import { Errors } from '../errors.js'

/** Makes every method that Node's parser accepts (PROPFIND, LOCK, …) routable, so that none falls through to the 404 handler. */
export function routeEveryMethod (app: FastifyInstance): void {
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method)
  }
}

interface MethodNotAllowedOptions {
  /** The API's paths, relative to the plugin's prefix; their routes must be registered already. */
  paths: readonly string[]
}

const methodNotAllowedRoutes: FastifyPluginAsync<MethodNotAllowedOptions> = async (app, { paths }) => {
  for (const url of paths) {
    const routed = (method: string): boolean => app.hasRoute({ url: `${app.prefix}${url}`, method })
    const allow = app.supportedMethods.filter(routed).sort().join(', ')
    const refuse = async (request: FastifyRequest): Promise<never> => { throw Errors.methodNotAllowed(request.method, allow) }
    app.route({
      method: app.supportedMethods.filter((method) => !routed(method)),
      url,
      schema: { hide: true },
      onRequest: refuse,
      handler: refuse
    })
  }
}

export default methodNotAllowedRoutes
