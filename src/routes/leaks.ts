// Leaked tokens, reported without an API key (docs/API.md: Leaked tokens):
// POST /v1/secret-scanning takes a secret scanner's signed report, and
// POST /v1/credentials/revoke a holder's own tokens. Registered beside the
// /v1 scope, outside its gate: neither caller has a key to send. Each has a
// cap of its own per client address, counted before the body is read.
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { KeyStore, LeakStore } from '../db/storage.js'
import { Errors, type ErrorCode } from '../errors.js'
import { HOLDER_REPORT, reportId, reportToken } from '../keys/leaks.js'
import { ScannerKeysUnavailableError, type ScannerKeys } from '../keys/scanner-keys.js'
import { createAddressLimit } from '../limits/limit.js'
import type { RateLimitStore } from '../limits/store.js'
import { readJsonBody } from '../plugins/json-body.js'
import { CredentialsRevocation, RevocationAccepted, ScanLabels, ScanReport, SignatureHeaders } from '../schemas/leak.js'
import { RATE_LIMIT_HEADERS, errorAnswers, withHeaders } from '../schemas/responses.js'
import { FRAMING_ANSWERS } from '../plugins/framing.js'

/** A report of many matches is larger than the API's 16 KiB. */
const REPORT_BODY_LIMIT = 1024 * 1024
/** Reports a minute from one address: a scanner sends a few at a time, and retries what is refused. */
const REPORTS_PER_MINUTE = 120
/** Revocations a minute from one address, each of up to 100 tokens. */
const REVOCATIONS_PER_MINUTE = 10

/**
 * What both routes may answer besides their own: no key is asked for, so no
 * 401 of a key's and no ban or cap of one; and they are outside the /v1
 * scope, which sheds load (docs/API.md: Leaked tokens). The revocation's
 * storage work runs after its answer, so only a report can meet a database
 * that is away.
 */
const BODY_ANSWERS = [
  ...FRAMING_ANSWERS, 'invalid_json', 'payload_too_large', 'unsupported_media_type', 'rate_limited', 'internal_error'
] as const satisfies readonly ErrorCode[]

/**
 * Neither route asks who is calling. OpenAPI says so with one empty security
 * requirement, which allows anonymous access explicitly; an empty list would
 * only leave the requirement unsaid, as if forgotten, and linters (the OWASP
 * ruleset's api2 write rule) take it so.
 * https://spec.openapis.org/oas/v3.1.0#security-requirement-object
 */
const ANONYMOUS = [{}]

interface LeakRoutesOptions {
  storage: KeyStore & LeakStore
  limiter: RateLimitStore
  scannerKeys: ScannerKeys
  now: () => number
  logger: FastifyBaseLogger | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** A signed body's bytes, as sent: what its signature is over. */
    signedBody: Buffer | undefined
  }
}

/** The words of every revocation's answer: the same whether or not any token was ours. */
const ACCEPTED = 'Any of these tokens that belongs to a live API key is being revoked; within a second no instance accepts it.'

const leakRoutes: FastifyPluginAsyncTypebox<LeakRoutesOptions> = async (app, { storage, limiter, scannerKeys, now, logger }) => {
  app.decorateRequest('signedBody', undefined)
  const limitReports = createAddressLimit({ store: limiter, now, name: 'secret-scanning', perMinute: REPORTS_PER_MINUTE })
  const limitRevocations = createAddressLimit({ store: limiter, now, name: 'credentials-revoke', perMinute: REVOCATIONS_PER_MINUTE })
  const limited = (limit: typeof limitReports) => async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const decision = await limit(request.ip)
    reply.headers(decision.headers)
    if (decision.refusal !== undefined) throw decision.refusal
  }

  await app.register(async function reports (reports) {
    // The signature is over the bytes as sent, so this scope parses them
    // itself, after checking it: an unsigned body is refused before it is parsed.
    reports.removeContentTypeParser('application/json')
    reports.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) => {
      let verified
      try {
        verified = await scannerKeys.verify(header(request, 'github-public-key-identifier'), header(request, 'github-public-key-signature'), body)
      } catch (error) {
        if (!(error instanceof ScannerKeysUnavailableError)) throw error
        throw Errors.scannerKeysUnavailable(Math.max(1, Math.ceil(error.retryAfterMs / 1000)))
      }
      if (!verified) throw Errors.badSignature()
      request.signedBody = body
      return readJsonBody(request, body)
    })
    // Fastify's own refusal of a body over the route's limit says 16 KiB; this route's is 1 MiB.
    reports.setErrorHandler(async (error: FastifyError) => {
      throw error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? Errors.reportTooLarge() : error
    })

    reports.withTypeProvider<TypeBoxTypeProvider>().post('/secret-scanning', {
      bodyLimit: REPORT_BODY_LIMIT,
      onRequest: limited(limitReports),
      schema: {
        operationId: 'reportLeakedTokens',
        summary: 'Report leaked tokens (secret scanners)',
        description: 'For a secret scanner such as GitHub\'s (its partner program): the matches of the token pattern it found in public, signed with ECDSA P-256 / SHA-256 over the body as sent (`Github-Public-Key-Identifier`, `Github-Public-Key-Signature`). Each token of a live key revokes the key; the answer labels each match. No API key; at most 1 MiB and 1,000 matches; 120 reports a minute per address.',
        tags: ['leaks'],
        security: ANONYMOUS,
        headers: SignatureHeaders,
        body: ScanReport,
        response: {
          200: withHeaders(ScanLabels, 'Each match, labelled.', RATE_LIMIT_HEADERS),
          ...errorAnswers([...BODY_ANSWERS, 'invalid_signature', 'service_unavailable'], RATE_LIMIT_HEADERS)
        }
      }
    }, async (request) => {
      const report = reportId(request.signedBody ?? Buffer.alloc(0))
      const labels = []
      // One at a time: a report's matches are few, and the database serves everyone else meanwhile.
      for (const match of request.body) {
        const label = await reportToken(storage, { token: match.token, report, url: match.url ?? null, source: match.source ?? null }, now())
        labels.push({ token_raw: match.token, token_type: match.type, label })
      }
      return labels
    })
  })

  // Revocations run after the answer, so that it comes as fast for tokens
  // that were never keys as for live ones; closing waits for them.
  const running = new Set<Promise<void>>()
  app.addHook('onClose', async () => { await Promise.allSettled(running) })

  app.post('/credentials/revoke', {
    onRequest: limited(limitRevocations),
    schema: {
      operationId: 'revokeCredentials',
      summary: 'Revoke tokens you hold',
      description: 'Whoever holds a token may revoke its key, with no API key, as with GitHub\'s credential revocation API: a token that is the key\'s current one, or its previous one while a roll\'s overlap runs, revokes the whole key. The answer is the same whether or not the tokens exist. 1 to 100 tokens a request; 10 requests a minute per address.',
      tags: ['leaks'],
      security: ANONYMOUS,
      body: CredentialsRevocation,
      response: {
        202: withHeaders(RevocationAccepted, 'The revocation is under way.', RATE_LIMIT_HEADERS),
        ...errorAnswers(BODY_ANSWERS, RATE_LIMIT_HEADERS)
      }
    }
  }, async (request, reply) => {
    const tokens = [...new Set(request.body.credentials)]
    const at = now()
    const work = (async () => {
      for (const token of tokens) await reportToken(storage, { token, report: HOLDER_REPORT, url: null, source: null }, at)
    })().catch((error: unknown) => { logger?.warn({ err: error }, 'credentials revoke: a revocation failed; the holder may send it again') })
    running.add(work)
    work.finally(() => running.delete(work)).catch(() => {})
    return await reply.code(202).send({ message: ACCEPTED })
  })
}

/** A header sent once; a repeated one is no signature. */
function header (request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return typeof value === 'string' ? value : undefined
}

export default leakRoutes
