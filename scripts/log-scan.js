#!/usr/bin/env node
// Scans the logs that a test run produced for secrets: API tokens and
// Authorization header values must never be logged (docs/KEYS.md). The
// tests' servers and in-process loggers write their logs to the run's folder
// (test/support/test-logs.ts); scripts/run-tests.js calls this once the test
// runner has ended. Only the service's logs are there: the `petstore keys
// create` command prints a token by design, and its output is not kept.
//
// `node scripts/log-scan.js DIR`: exit 1, naming each file and line, if
// anything is found.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

// What a token looks like is known in one place, src/keys/tokens.ts, used
// here compiled: every run of this scan (scripts/run-tests.js, after the
// build that made the tests it runs) has dist/ built. Without it, this stops
// with a message rather than scanning with a guess of its own.
const TOKENS = fileURLToPath(new URL('../dist/src/keys/tokens.js', import.meta.url))
if (!existsSync(TOKENS)) {
  console.error(`log scan: ${TOKENS} is missing: run \`npm run build\` first`)
  process.exit(2)
}
const { findTokens } = await import(pathToFileURL(TOKENS).href)

/** 20 characters of a token's secret already give a key away; fewer is prose about tokens (`pet_live_…`). */
const TOKEN_MARGIN = 20

/** The start of a token, percent-encoded or not, with its prefix or without: enough to find it, too little to use it. */
function findToken (line) {
  const found = findTokens(line).find((t) => t.secretLength >= TOKEN_MARGIN)
  if (found === undefined) return undefined
  return line.slice(found.start, found.start + (found.prefixed ? 14 : 5))
}

/** A token sent base64- or hex-encoded: each long enough run of either alphabet, decoded. A token is 45 characters: 60 in base64, 90 in hex. */
function findEncodedToken (line) {
  for (const [pattern, encoding] of [[/[A-Za-z0-9+/_-]{60,}={0,2}/g, 'base64'], [/(?:[0-9A-Fa-f]{2}){45,}/g, 'hex']]) {
    for (const match of line.matchAll(pattern)) {
      if (findToken(Buffer.from(match[0], encoding).toString('latin1')) !== undefined) return `${match[0].slice(0, 8)} (${encoding})`
    }
  }
  return undefined
}

/** A rule's finding: the start of what it found, which the report shows. */
const matching = (pattern) => (line) => pattern.exec(line)?.[0].slice(0, 14)

const RULES = [
  { name: 'an API token', find: findToken },
  { name: 'an encoded API token', find: findEncodedToken },
  // A header logged as JSON (pino) that the redaction missed.
  { name: 'an Authorization field', find: matching(/"authorization"\s*:\s*"(?!\[redacted\]")/i) },
  // A header written as text, in an error message or a dump of a raw request.
  { name: 'an Authorization header', find: matching(/\bauthorization\s*:\s*(?:bearer|basic|token)\s+[^\s<]/i) },
  // A credential after its scheme anywhere else: a long b64token (RFC 6750 §2.1), which no prose has.
  { name: 'a bearer credential', find: matching(/\bbearer +[A-Za-z0-9\-._~+/]{16,}/i) }
]

/**
 * Every line of every file in `dir` that carries a secret. A finding shows
 * only the start of what it found: the scan's own output must not leak it.
 */
export function scanLogs (dir) {
  const files = readdirSync(dir).filter((name) => name.endsWith('.log')).sort()
  const findings = []
  let lines = 0
  for (const name of files) {
    const text = readFileSync(join(dir, name), 'utf8')
    text.split('\n').forEach((line, index) => {
      lines++
      for (const rule of RULES) {
        const excerpt = rule.find(line)
        if (excerpt !== undefined) findings.push({ file: name, line: index + 1, rule: rule.name, excerpt: `${excerpt}…` })
      }
    })
  }
  return { files, lines, findings }
}

/** Findings listed one by one; past these, a count per file. */
const LISTED = 40

/** The report of a scan, as printed at the end of a test run. */
export function describeScan (dir, { files, lines, findings }) {
  if (findings.length === 0) return `log scan: no token or Authorization value in ${files.length} log files (${lines} lines)`
  const rest = new Map()
  for (const f of findings.slice(LISTED)) rest.set(f.file, (rest.get(f.file) ?? 0) + 1)
  return [
    `log scan: FAILED: ${findings.length} secret(s) in the logs the tests produced (${dir}):`,
    ...findings.slice(0, LISTED).map((f) => `  ${f.file}:${f.line}: ${f.rule} (${f.excerpt})`),
    ...[...rest].map(([file, count]) => `  ${file}: ${count} more`)
  ].join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2]
  if (dir === undefined) {
    console.error('usage: node scripts/log-scan.js DIR')
    process.exit(2)
  }
  const result = scanLogs(dir)
  const report = describeScan(dir, result)
  if (result.findings.length > 0) {
    console.error(report)
    process.exit(1)
  }
  console.log(report)
}
