// Fastify answers 404 to a known path with an unknown method; HTTP says 405
// with the methods the path has (RFC 9110 §15.5.6). Answered in onRequest,
// after the request is counted and before any body is read.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'

/** Each path of the API (relative to /v1) and the methods it has. HEAD comes with every GET. */
export type PathMethods = Record<string, readonly string[]>

export interface MethodNotAllowedOptions {
  paths: PathMethods
}

function allowHeader (methods: readonly string[]): string {
  return [...new Set(methods.includes('GET') ? [...methods, 'HEAD'] : methods)].sort().join(', ')
}

export function methodNotAllowed (request: FastifyRequest, allow: string): ApiError {
  return new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allow}.`, { headers: { allow } })
}

/**
 * The Allow header for a concrete path, if the path is known: for methods
 * the router does not know at all (PROPFIND, …), which reach the 404 handler.
 */
export function allowedMethods (paths: PathMethods, prefix: string, url: string): string | undefined {
  const path = url.split('?')[0] ?? ''
  for (const [pattern, methods] of Object.entries(paths)) {
    const regex = new RegExp(`^${prefix}${pattern.replace(/:[^/]+/g, '[^/]+')}$`)
    if (regex.test(path)) return allowHeader(methods)
  }
  return undefined
}

const methodNotAllowedRoutes: FastifyPluginAsync<MethodNotAllowedOptions> = async (app, { paths }) => {
  for (const [url, methods] of Object.entries(paths)) {
    const allow = allowHeader(methods)
    const others = app.supportedMethods.filter((m) => !allow.split(', ').includes(m))
    app.route({
      method: others,
      url,
      schema: { hide: true },
      onRequest: async (request) => { throw methodNotAllowed(request, allow) },
      handler: async (request) => { throw methodNotAllowed(request, allow) }
    })
  }
}

export default methodNotAllowedRoutes
