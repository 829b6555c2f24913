// Generated HTTP/1.1 framing over raw sockets, against `petstore serve` on
// a real port: request lines, header syntax, Content-Length and
// Transfer-Encoding (together, repeated, wrong), chunked bodies with bad
// sizes, absolute-form targets, a missing or doubled Host, expectations,
// HTTP/1.0 and pipelining. No 5xx; no more answers than requests (a
// request never hides inside another); every answer to a well-formed
// request as the OpenAPI document describes it, and every other one a
// documented Error body. 100 connections in `npm test`, 1,000 under
// `npm run test:soak`; the seed is printed, and PETSTORE_FUZZ_SEED replays it.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { OpenApiChecker, type ReceivedResponse } from '../support/openapi-check.js'
import { createKey, makeTempDir, removeTempDir, sqliteUrl, startServer, withTimeout, type ServerProcess } from '../support/process.js'
import { iterations } from '../support/soak.js'
import { Figures, KEEP_GOING, fuzzParameters, judge } from './harness.js'

/** The router's longest path parameter (app.ts). */
const MAX_PARAM_LENGTH = 1000
/** How long a connection may take to be answered and closed, once the client has sent all and half-closed it. */
const CONNECTION_MS = 5_000

interface Part { text: string, wellFormed: boolean }

/** One request of a connection, as bytes, and what it is meant to be when it is well formed. */
interface RawRequest {
  method: string
  target: string
  bytes: string
  /** The body as meant, when the framing carries one. */
  payload: string | undefined
  /** Every part is valid HTTP/1.1 (or 1.0): the answer must be the operation's. */
  wellFormed: boolean
  /** Requests its bytes may hold besides itself: a Content-Length too short leaves the rest of the body to be read as one. */
  extra: number
  /** Its header lines, by lower-case name. */
  headers: Record<string, string>
}

const good = (text: string): Part => ({ text, wellFormed: true })
const bad = (text: string): Part => ({ text, wellFormed: false })

const METHOD = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'HEAD', 'DELETE', 'PUT', 'OPTIONS', 'PATCH').map(good) },
  { weight: 1, arbitrary: fc.constantFrom('get', 'G ET', 'GET\t', 'FOO', 'PRI', '', '\x00GET', 'GÉT', 'X'.repeat(100)).map(bad) }
)

const TARGET = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('/v1/pets', '/v1/pets?limit=2', '/v1/pets?limit=2&status=sold', '/v1/pets/1', '/v1/pets/999999', '/v1/pets/abc', '/v1/pets?limit=0', '/v1/nothing', '/v1/pets/%zz', '/nothing').map(good) },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.constantFrom('http://127.0.0.1/v1/pets', 'http://evil.example/v1/pets?limit=1', 'https://evil.example:8443/v1/pets/1', '*', '127.0.0.1:80', '', 'v1/pets', '/v1/pets with space',
        '/v1/pets\x00', '/v1/pets\x7f', '/v1/pé', '/v1/pets#frag', '//v1/pets', '/v1/pets?' + 'a'.repeat(5000), '/' + 'a'.repeat(20_000)),
      fc.string({ unit: 'binary-ascii', maxLength: 40 }).map((s) => `/v1/${s}`)
    ).map(bad)
  }
)

const VERSION = fc.oneof(
  { weight: 12, arbitrary: fc.constant(good('HTTP/1.1')) },
  { weight: 2, arbitrary: fc.constant(good('HTTP/1.0')) },
  { weight: 1, arbitrary: fc.constantFrom('HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'http/1.1', 'HTTP/1.1 x', '', 'HTTP/11', 'HTTP/1.1\t').map(bad) }
)

const HOST = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Part[]>([good('Host: localhost')]) },
  // Well formed, and each answered as such: 400 under HTTP/1.1 without Host, nothing taken from a foreign one.
  { weight: 2, arbitrary: fc.constantFrom<Part[]>([], [good('Host: evil.example')], [good('Host: ')]) },
  { weight: 1, arbitrary: fc.constantFrom<Part[]>([bad('Host: a'), bad('Host: b')], [bad('Host: a b')], [bad('Host: ' + 'h'.repeat(20_000))]) }
)

/** Header lines besides Host and the framing ones. */
const OTHER_HEADERS = fc.array(fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom('Accept: application/json', 'Connection: keep-alive', 'X-Request-Id: fuzz-1', 'User-Agent: fuzz', 'Expect: 100-continue', 'Expect: bogus', 'Upgrade: websocket', 'Connection: Upgrade', 'Idempotency-Key: k-1', 'Accept-Encoding: gzip').map(good) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('NoColon', ' leading: space', 'Bad Name: x', 'X-Nul: a\x00b', 'X-Ctl: a\x01b', ': empty-name', 'X-Fold: a\r\n b', 'X-Long: ' + 'a'.repeat(20_000),
      'Authorization: Bearer a\x00b', 'Content-Type: application/json\x00', 'X-\u00e9: x').map(bad)
  }
), { maxLength: 3 })

type Framing =
  | { kind: 'none' | 'content-length' | 'chunked' | 'chunk-extension' | 'chunked-trailer' }
  | { kind: 'malformed', variant: string }

const FRAMING: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<Framing>({ kind: 'none' }, { kind: 'content-length' }, { kind: 'content-length' }, { kind: 'chunked' }, { kind: 'chunk-extension' }, { kind: 'chunked-trailer' }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('cl-and-te', 'te-and-cl', 'two-cl', 'two-cl-same', 'cl-list', 'cl-negative', 'cl-text', 'cl-plus', 'cl-short', 'cl-huge',
      'te-gzip', 'te-chunked-twice', 'te-xchunked', 'te-space', 'chunk-size-text', 'chunk-size-negative', 'chunk-size-huge', 'chunk-size-short',
      'chunk-no-final', 'chunk-no-crlf', 'chunk-size-space', 'te-http10').map((variant): Framing => ({ kind: 'malformed', variant }))
  }
)

const BODY = fc.oneof(
  { weight: 5, arbitrary: fc.constant('{"name":"Rex","categoryId":1}') },
  { weight: 2, arbitrary: fc.constantFrom('{"name":"Ünïcödé 🐕","categoryId":9223372036854775807,"status":"sold"}', '{"name":"Rex"}', '{', '', 'x'.repeat(17_000), `{"name":"${'a'.repeat(20_000)}","categoryId":1}`) }
)

interface RequestParts {
  method: Part
  target: Part
  version: Part
  host: Part[]
  auth: boolean
  headers: Part[]
  framing: Framing
  body: string
  lineEnding: Part
}

const REQUEST: fc.Arbitrary<RequestParts> = fc.record({
  method: METHOD,
  target: TARGET,
  version: VERSION,
  host: HOST,
  auth: fc.boolean(),
  headers: OTHER_HEADERS,
  framing: FRAMING,
  body: BODY,
  lineEnding: fc.oneof({ weight: 15, arbitrary: fc.constant(good('\r\n')) }, { weight: 1, arbitrary: fc.constantFrom(bad('\n'), bad('\r')) })
})

const CONNECTION = fc.array(REQUEST, { minLength: 1, maxLength: 3 })

function utf8Length (text: string): number {
  return Buffer.byteLength(text)
}

/** The framing header lines and the body as sent, and whether the framing is valid. */
function frame (framing: Framing, body: string, chunked: (text: string) => string): { lines: string[], payload: string, wellFormed: boolean } {
  const length = utf8Length(body)
  switch (framing.kind) {
    case 'none': return { lines: [], payload: '', wellFormed: true }
    case 'content-length': return { lines: [`Content-Length: ${length}`], payload: body, wellFormed: true }
    case 'chunked': return { lines: ['Transfer-Encoding: chunked'], payload: chunked(body), wellFormed: true }
    case 'chunk-extension': return { lines: ['Transfer-Encoding: chunked'], payload: `${body === '' ? '' : `${length.toString(16)};name=value\r\n${body}\r\n`}0;name=value\r\n\r\n`, wellFormed: true }
    case 'chunked-trailer': return { lines: ['Transfer-Encoding: chunked'], payload: `${chunked(body).slice(0, -2)}X-Trailer: 1\r\n\r\n`, wellFormed: true }
    case 'malformed': {
      const variants: Record<string, { lines: string[], payload: string }> = {
        'cl-and-te': { lines: [`Content-Length: ${length}`, 'Transfer-Encoding: chunked'], payload: chunked(body) },
        'te-and-cl': { lines: ['Transfer-Encoding: chunked', `Content-Length: ${length + 5}`], payload: chunked(body) },
        'two-cl': { lines: [`Content-Length: ${length}`, `Content-Length: ${length + 1}`], payload: body },
        'two-cl-same': { lines: [`Content-Length: ${length}`, `Content-Length: ${length}`], payload: body },
        'cl-list': { lines: [`Content-Length: ${length}, ${length}`], payload: body },
        'cl-negative': { lines: ['Content-Length: -1'], payload: body },
        'cl-text': { lines: ['Content-Length: abc'], payload: body },
        'cl-plus': { lines: [`Content-Length: +${length}`], payload: body },
        'cl-short': { lines: [`Content-Length: ${Math.max(0, length - 3)}`], payload: body },
        'cl-huge': { lines: ['Content-Length: 99999999999999999999'], payload: body },
        'te-gzip': { lines: ['Transfer-Encoding: gzip'], payload: body },
        'te-chunked-twice': { lines: ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], payload: chunked(body) },
        'te-xchunked': { lines: ['Transfer-Encoding: xchunked'], payload: chunked(body) },
        'te-space': { lines: ['Transfer-Encoding : chunked'], payload: chunked(body) },
        'chunk-size-text': { lines: ['Transfer-Encoding: chunked'], payload: `zz\r\n${body}\r\n0\r\n\r\n` },
        'chunk-size-negative': { lines: ['Transfer-Encoding: chunked'], payload: `-1\r\n${body}\r\n0\r\n\r\n` },
        'chunk-size-huge': { lines: ['Transfer-Encoding: chunked'], payload: `ffffffffffffffffff\r\n${body}\r\n0\r\n\r\n` },
        'chunk-size-short': { lines: ['Transfer-Encoding: chunked'], payload: `1\r\n${body}\r\n0\r\n\r\n` },
        'chunk-no-final': { lines: ['Transfer-Encoding: chunked'], payload: `${length.toString(16)}\r\n${body}\r\n` },
        'chunk-no-crlf': { lines: ['Transfer-Encoding: chunked'], payload: `${length.toString(16)}\r\n${body}0\r\n\r\n` },
        'chunk-size-space': { lines: ['Transfer-Encoding: chunked'], payload: `${length.toString(16)} \r\n${body}\r\n0\r\n\r\n` },
        'te-http10': { lines: ['Transfer-Encoding: chunked', `Content-Length: ${length}`], payload: body }
      }
      const chosen = variants[framing.variant] ?? { lines: [], payload: '' }
      return { ...chosen, wellFormed: false }
    }
  }
}

function build (parts: RequestParts, token: string): RawRequest {
  const eol = parts.lineEnding.text
  const chunked = (text: string): string => text === '' ? '0\r\n\r\n' : `${utf8Length(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`
  const framed = frame(parts.framing, parts.body, chunked)
  const lines = [
    `${parts.method.text} ${parts.target.text} ${parts.version.text}`.replace(/ $/, ''),
    ...parts.host.map((h) => h.text),
    ...(parts.auth ? [`Authorization: Bearer ${token}`] : []),
    ...parts.headers.map((h) => h.text),
    ...(framed.lines.length > 0 ? ['Content-Type: application/json', ...framed.lines] : [])
  ]
  const wellFormed = [parts.method, parts.target, parts.version, parts.lineEnding, ...parts.host, ...parts.headers].every((p) => p.wellFormed) &&
    framed.wellFormed &&
    // HTTP/1.0 has no chunked coding (RFC 9112 §6.1).
    !(parts.version.text === 'HTTP/1.0' && framed.lines.some((l) => l.startsWith('Transfer-Encoding')))
  const payload = parts.framing.kind === 'none' ? undefined : parts.body
  const extra = parts.framing.kind === 'malformed' && parts.framing.variant === 'cl-short' ? 1 : 0
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { method: parts.method.text, target: parts.target.text, bytes: `${lines.join(eol)}${eol}${eol}${framed.payload}`, payload, wellFormed, extra, headers }
}

/** Sends the bytes, half-closes, and gathers all that comes back until the server closes. */
async function exchange (port: number, bytes: string): Promise<Buffer> {
  const socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => resolve())
    // The server may answer and close before it has read all that was sent (431): what it answered counts.
    socket.on('error', () => {})
  })
  socket.end(bytes, 'utf8')
  try {
    await withTimeout(closed, CONNECTION_MS, 'the server to answer and close a fuzzed connection')
  } catch (error) {
    // What it was sent and had answered: a hang under load does not always come back with the seed.
    const received = Buffer.concat(chunks).toString('latin1')
    throw new Error(`${(error as Error).message}: ${received.length} bytes back (${JSON.stringify(received.slice(0, 120))}) for ${JSON.stringify(bytes.slice(0, 300))}`)
  } finally {
    socket.destroy()
  }
  return Buffer.concat(chunks)
}

interface RawAnswer extends ReceivedResponse { headers: Array<[string, string]> }

/** Splits what came back into responses; interim 1xx answers (100 Continue) are left out. */
function responsesIn (data: Buffer, methods: readonly string[]): { answers: RawAnswer[], rest: string } {
  const answers: RawAnswer[] = []
  let offset = 0
  while (offset < data.length) {
    const end = data.indexOf('\r\n\r\n', offset)
    if (end === -1) break
    const [statusLine = '', ...lines] = data.subarray(offset, end).toString('latin1').split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine)?.[1] ?? NaN)
    if (Number.isNaN(status)) break
    const headers = lines.map((line): [string, string] => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])
    offset = end + 4
    if (status < 200) continue
    const length = headers.find(([name]) => name === 'content-length')?.[1]
    // A request this test calls malformed may still have been taken as a HEAD:
    // then what follows is the next answer (every body of this service is JSON).
    const next = data.subarray(offset, offset + 7).toString('latin1')
    const headLike = /^HEAD\b/.test(methods[answers.length] ?? '') && (next === '' || next === 'HTTP/1.')
    const bodyless = headLike || status === 204 || status === 304
    const size = bodyless ? 0 : length === undefined ? data.length - offset : Number(length)
    answers.push({ status, headers, body: data.subarray(offset, offset + size).toString('utf8') })
    offset += size
  }
  return { answers, rest: data.subarray(offset).toString('latin1') }
}

describe('fuzzing HTTP framing over raw sockets', { timeout: 600_000 }, () => {
  let dir: string | undefined
  let server: ServerProcess | undefined
  let token = ''
  let checker: OpenApiChecker

  before(async () => {
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir), LOG_LEVEL: 'warn' }
    token = (await createKey(env, ['--plan', 'enterprise', '--per-minute', '1000000000', '--per-day', '1000000000'])).token
    server = await startServer(env)
    const document = await fetch(`${server.origin}/v1/openapi.json`)
    checker = new OpenApiChecker(await document.text())
  })

  after(async () => {
    await server?.stop()
    removeTempDir(dir)
  })

  const runs = iterations(100, 1000)
  test(`When ${runs} connections send generated HTTP/1.1 framing, then none gets a 5xx or more answers than requests, and every answer is as the OpenAPI document describes it`, async (t) => {
    assert.ok(server !== undefined)
    const port = server.port
    const origin = server.origin
    const figures = new Figures()
    const parameters = fuzzParameters<[RequestParts[]]>(runs)
    t.diagnostic(`raw sockets: seed ${parameters.seed} (replay: PETSTORE_FUZZ_SEED=${parameters.seed})`)
    const property = fc.asyncProperty(CONNECTION, async (connection) => {
      const sentRequests = connection.map((parts) => build(parts, token))
      const data = await exchange(port, sentRequests.map((r) => r.bytes).join(''))
      // What the server reads: a Content-Length too short leaves the rest of
      // the body to begin a request of its own, which it refuses.
      const requests = sentRequests.flatMap((r) => r.extra === 0 ? [r] : [r, { ...r, method: 'malformed', target: '', payload: undefined, wellFormed: false, extra: 0, headers: {} }])
      const { answers, rest } = responsesIn(data, requests.map((r) => r.method))
      const problems: string[] = []
      figures.unanswered += Math.max(0, sentRequests.length - answers.length)
      if (answers.length > requests.length) problems.push(`${answers.length} answers to ${sentRequests.length} requests: ${data.toString('latin1').slice(0, 600)}`)
      if (rest !== '') problems.push(`bytes that are no response: ${JSON.stringify(rest.slice(0, 300))}`)
      answers.forEach((answer, index) => {
        const request = requests[index]
        if (request === undefined) return
        // A request that is not well formed may be refused, with a documented
        // Error body and no operation; or, where HTTP lets a server be lenient,
        // taken as what it looks like, and answered as that operation.
        const taken = request.wellFormed || answer.status < 400 || (request.method === 'HEAD' && answer.body === '')
        const sent = taken
          ? { method: request.method, url: request.target, headers: request.headers, ...(request.payload === undefined ? {} : { payload: request.payload }) }
          : { method: 'malformed', url: request.target, headers: request.headers }
        const verdict = judge(checker, sent, answer, { maxParamLength: MAX_PARAM_LENGTH, baseUrl: `${origin}/v1` })
        verdict.problems = verdict.problems.map((p) => `${p}\n  connection: ${JSON.stringify(sentRequests.map((r) => r.bytes.slice(0, 300)))}`)
        figures.record(verdict, answer.status)
        problems.push(...verdict.problems)
      })
      if (problems.length > 0 && !KEEP_GOING) throw new Error(problems.join('\n'))
    })
    try {
      await fc.assert(property, parameters)
    } finally {
      t.diagnostic(figures.summary('raw sockets', parameters.seed))
    }
    assert.equal(figures.serverErrors, 0)
    assert.equal(figures.failures, 0)
  })
})
