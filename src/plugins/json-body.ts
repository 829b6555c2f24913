// Request bodies: JSON only, UTF-8 only, at most 16 KiB, parsed without
// losing a digit.
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { Errors } from '../errors.js'
import { JsonBodyError, parseJsonBody } from './json.js'

export const BODY_LIMIT = 16 * 1024

/** JSON is UTF-8 (RFC 8259 §8.1); a declared charset may only say so. */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i

export default fp(async function jsonBody (app) {
  // Fastify also parses text/plain by default; the API takes JSON alone, so
  // anything else is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    try {
      done(null, readJsonBody(request, body as Buffer))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}, { name: 'json-body' })

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * A body's bytes as the API takes them: uncompressed, UTF-8, JSON; throws
 * the refusal. Also for a route that must keep the bytes as sent (a signed
 * body, routes/leaks.ts), and so parses them itself.
 */
export function readJsonBody (request: FastifyRequest, body: Buffer): unknown {
  // Bodies are taken uncompressed only (RFC 9110 §8.4, §15.5.16): a gzip
  // body read as text gets a misleading invalid_json, and a body that says
  // gzip but is not would be parsed as if the header were not there.
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && !isIdentity(encoding)) throw Errors.encodedBody(encoding)
  const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase()
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') throw Errors.notUtf8(charset)
  let text: string
  try {
    // Malformed bytes are refused, not turned into U+FFFD: names are stored exactly as sent.
    text = utf8.decode(body)
  } catch {
    throw new JsonBodyError('it is not valid UTF-8')
  }
  return parseJsonBody(text)
}

/** `identity` (or nothing) in every coding listed: the body is as sent. */
function isIdentity (header: string): boolean {
  return header.split(',').every((coding) => {
    const name = coding.trim().toLowerCase()
    return name === '' || name === 'identity'
  })
}
