#!/usr/bin/env node
// Scans the logs that a test run produced for secrets: API tokens and
// Authorization header values must never be logged (DECISIONS §2). The
// tests' servers and in-process loggers write their logs to the run's folder
// (test/support/test-logs.ts); scripts/run-tests.js calls this once the test
// runner has ended. Only the service's logs are there: the `petstore keys
// create` command prints a token by design, and its output is not kept.
//
// `node scripts/log-scan.js DIR`: exit 1, naming each file and line, if
// anything is found.
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const RULES = [
  // The token format of src/keys/tokens.ts, with a margin: 20 characters of it already give a key away.
  { name: 'an API token', pattern: /pet_(?:live|test)_[0-9A-Za-z]{20,}/ },
  // A header logged as JSON (pino) that the redaction missed.
  { name: 'an Authorization field', pattern: /"authorization"\s*:\s*"(?!\[redacted\]")/i },
  // A header written as text, in an error message or a dump of a raw request.
  { name: 'an Authorization header', pattern: /\bauthorization\s*:\s*(?:bearer|basic|token)\s+[^\s<]/i },
  // A credential after its scheme anywhere else: a long b64token (RFC 6750 §2.1), which no prose has.
  { name: 'a bearer credential', pattern: /\bbearer +[A-Za-z0-9\-._~+/]{16,}/i }
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
        const match = rule.pattern.exec(line)
        if (match !== null) findings.push({ file: name, line: index + 1, rule: rule.name, excerpt: `${match[0].slice(0, 14)}…` })
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
