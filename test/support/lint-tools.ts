// The linters the tests run on the OpenAPI documents as served (redocly,
// Spectral), from the project's own dev dependencies, with their telemetry,
// notices and colours off.
import { execFile } from 'node:child_process'
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
