// The linters the tests run on the OpenAPI documents as served (redocly,
// Spectral), from the project's own dev dependencies, with their telemetry,
// notices and colours off.
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { PROJECT_ROOT } from './process.js'

export interface ToolRun { code: number | string | null, stdout: string, stderr: string }

/** Runs `node_modules/.bin/NAME ARGS…` in `cwd`; resolves with what it printed, whatever its exit status. */
export function runTool (name: string, args: string[], cwd: string): Promise<ToolRun> {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', NO_COLOR: '1' }
  return new Promise((resolve) => {
    execFile(join(PROJECT_ROOT, 'node_modules', '.bin', name), args, { cwd, env, timeout: 45_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : error.code ?? null, stdout, stderr })
    })
  })
}

/**
 * Spectral with the OWASP API Security ruleset on `openapi.json` in `dir`:
 * its errors, one line each, and the run. Ids are integers, as SPEC.md has
 * them (docs/API.md: Input is strict), so the
 * numeric-ids rule is off.
 */
export async function spectralOwaspErrors (dir: string): Promise<{ errors: string[], run: ToolRun }> {
  // Resolved from here, since Spectral resolves a ruleset's `extends` from the ruleset's own directory.
  const owasp = createRequire(import.meta.url).resolve('@stoplight/spectral-owasp-ruleset')
  const ruleset = { extends: ['spectral:oas', owasp], rules: { 'owasp:api1:2023-no-numeric-ids': 'off' } }
  await writeFile(join(dir, 'spectral.json'), JSON.stringify(ruleset, null, 2))
  const run = await runTool('spectral', ['lint', 'openapi.json', '--ruleset', 'spectral.json', '--format', 'json', '--fail-severity', 'error'], dir)
  const problems = JSON.parse(run.stdout) as Array<{ severity: number, code: string, message: string, path: string[] }>
  return { errors: problems.filter((p) => p.severity === 0).map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`), run }
}
