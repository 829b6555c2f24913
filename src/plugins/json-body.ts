// Request bodies: JSON only, at most 16 KiB, parsed without losing a digit.
import fp from 'fastify-plugin'
import { parseJsonBody } from '../json.js'

export const BODY_LIMIT = 16 * 1024

export default fp(async function jsonBody (app) {
  // Fastify also parses text/plain by default; the API takes JSON alone, so
  // anything else is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}, { name: 'json-body' })
