#!/usr/bin/env node
// `npm run audit:deps`: the production dependencies (`npm audit --omit=dev`)
// must carry no high or critical advisory. .ci/run runs it after `npm test`.
//
// Two outcomes are told apart, since `npm audit` exits 1 for both: the
// registry answered and found advisories (a failure, naming each one), or
// the registry's advisory endpoint could not be reached (a registry mirror
// that serves packages only answers 405). The second is reported loudly as
// "not audited" and passes, unless `--strict` is given: the audit is then
// for a machine that reaches the endpoint.
//
// An advisory that cannot be fixed by an upgrade is accepted only when it
// is listed in ACCEPTED with the reason, which docs/SECURITY.md repeats.
//
// `node scripts/audit.js [--strict] [--report FILE]`: FILE is a saved
// `npm audit --json` report, read instead of asking the registry.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Advisory id or URL → why it stays (see docs/SECURITY.md, "Dependencies"). None today. */
const ACCEPTED = new Map()

const BLOCKING = new Set(['high', 'critical'])

const args = process.argv.slice(2)
const strict = args.includes('--strict')
const reportFile = args.includes('--report') ? args[args.indexOf('--report') + 1] : undefined

function runAudit () {
  const npm = process.env.npm_execpath
  // Under `npm run`, npm_execpath is npm's own script; run directly, the `npm` on the PATH.
  const [command, prefix] = npm === undefined || npm === '' ? ['npm', []] : [process.execPath, [npm]]
  const result = spawnSync(command, [...prefix, 'audit', '--omit=dev', '--json'], { encoding: 'utf8', timeout: 120_000 })
  if (result.error !== undefined) return { error: { message: result.error.message } }
  return parse(result.stdout)
}

function parse (text) {
  try {
    return JSON.parse(text)
  } catch {
    return { error: { message: `npm audit printed no JSON report: ${text.slice(0, 200)}` } }
  }
}

const report = reportFile === undefined ? runAudit() : parse(readFileSync(reportFile, 'utf8'))

if (report.metadata?.vulnerabilities === undefined) {
  // The registry did not answer with a report: an error object (npm's own, or the endpoint's status).
  const reason = report.message ?? report.error?.summary ?? report.error?.message ?? JSON.stringify(report).slice(0, 200)
  console.error(`audit: NOT AUDITED: the registry's advisory endpoint did not answer (${reason})`)
  process.exit(strict ? 1 : 0)
}

const blocking = []
for (const [name, entry] of Object.entries(report.vulnerabilities ?? {})) {
  // `via` holds the advisories themselves, or the names of vulnerable dependencies that bring them.
  for (const via of entry.via ?? []) {
    if (typeof via !== 'object' || !BLOCKING.has(via.severity)) continue
    const id = via.url ?? String(via.source)
    if (ACCEPTED.has(id)) {
      console.error(`audit: accepted: ${name} ${via.range ?? ''}: ${via.title} (${id}): ${ACCEPTED.get(id)}`)
      continue
    }
    blocking.push(`${via.severity}: ${name} ${via.range ?? ''}: ${via.title} (${id})${entry.fixAvailable === false ? ', no fix available' : ''}`)
  }
}
const counts = report.metadata.vulnerabilities
const summary = `${counts.critical ?? 0} critical, ${counts.high ?? 0} high, ${counts.moderate ?? 0} moderate, ${counts.low ?? 0} low`
if (blocking.length > 0) {
  console.error(`audit: FAILED: production dependencies have high or critical advisories (${summary}):`)
  for (const line of [...new Set(blocking)]) console.error(`  ${line}`)
  process.exit(1)
}
console.error(`audit: production dependencies: no high or critical advisory (${summary})`)
