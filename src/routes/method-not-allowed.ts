// Fastify answers 404 to a known path with an unknown method; HTTP says 405
// with the methods the path has (RFC 9110 §15.5.6).
import type { FastifyPluginAsync } from 'fastify'
import { ApiError } from '../errors.js'

const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const

/** Each path of the API and the methods it has. HEAD comes with every GET. */
export interface MethodNotAllowedOptions {
  paths: Record<string, readonly string[]>
}

const methodNotAllowed: FastifyPluginAsync<MethodNotAllowedOptions> = async (app, { paths }) => {
  for (const [url, allowed] of Object.entries(paths)) {
    const allow = allowed.includes('GET') ? [...allowed, 'HEAD'] : [...allowed]
    const others = METHODS.filter((m) => !allow.includes(m))
    const header = allow.sort().join(', ')
    app.route({
      method: others,
      url,
      schema: { hide: true },
      handler: async (request) => {
        throw new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${header}.`, { headers: { allow: header } })
      }
    })
  }
}

export default methodNotAllowed
