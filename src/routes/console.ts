// The operator console (docs/KEYS.md: The console): GET /admin/
// on the admin listener, a page for people over the admin API. Its files
// (console/ at the project's root) and uPlot's are read once, at start, and
// served from memory with a Content-Security-Policy that allows nothing
// from elsewhere and nothing inline. The page itself needs no token: the
// operator types it in, and the page sends it with each admin API call.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { FastifyPluginAsync } from 'fastify'

/** Whatever the page holds, it may load and call this listener only, and may not be framed. */
const CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data:",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
].join('; ')

interface Asset {
  type: string
  body: Buffer
}

const CONSOLE = new URL('../../../console/', import.meta.url)
const resolve = createRequire(import.meta.url).resolve

/** Read at start: a file missing from an install is found then, not at the first visit. */
function assets (): Map<string, Asset> {
  const own = (name: string, type: string): [string, Asset] => [name, { type, body: readFileSync(new URL(name, CONSOLE)) }]
  const installed = (name: string, path: string, type: string): [string, Asset] => [name, { type, body: readFileSync(path) }]
  return new Map([
    own('console.js', 'text/javascript; charset=utf-8'),
    own('api.js', 'text/javascript; charset=utf-8'),
    own('chart.js', 'text/javascript; charset=utf-8'),
    own('deprecations.js', 'text/javascript; charset=utf-8'),
    own('dom.js', 'text/javascript; charset=utf-8'),
    own('webhooks.js', 'text/javascript; charset=utf-8'),
    own('console.css', 'text/css; charset=utf-8'),
    // uPlot's ES module: the page's modules import it by this name.
    installed('uPlot.esm.js', resolve('uplot/dist/uPlot.esm.js'), 'text/javascript; charset=utf-8'),
    installed('uPlot.min.css', resolve('uplot/dist/uPlot.min.css'), 'text/css; charset=utf-8')
  ])
}

const consoleRoutes: FastifyPluginAsync = async (app) => {
  const page = readFileSync(new URL('index.html', CONSOLE))
  const files = assets()
  const secure = { 'content-security-policy': CSP, 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' }

  app.get('/admin', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/admin/', 301))
  app.get('/admin/', { schema: { hide: true } }, async (_request, reply) =>
    reply.headers({ ...secure, 'cache-control': 'no-store' }).type('text/html; charset=utf-8').send(page))
  app.get<{ Params: { file: string } }>('/admin/console/:file', { schema: { hide: true } }, async (request, reply) => {
    const asset = files.get(request.params.file)
    if (asset === undefined) return reply.callNotFound()
    // Revalidated each time: the files change with each release, and are small.
    return reply.headers({ ...secure, 'cache-control': 'no-cache' }).type(asset.type).send(asset.body)
  })
}

export default consoleRoutes
