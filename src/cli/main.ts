// The `petstore` command: `serve`, and for operators `keys
// create|list|show|update|roll|find|revoke`, `webhooks …`, `backup` and
// `copy-store`.
// Every failure ends in one line on stderr, never a stack trace, and an
// exit status a script can test (errors.ts).
import { EXIT_FAILURE, EXIT_OK } from './errors.js'
import { buildProgram, failureLine, runProgram } from './program.js'
import { packageVersion } from './version.js'

/**
 * When the reader of stdout goes away (`petstore keys list | head -1`), the
 * output is no longer wanted: stop at once and quietly, with status 0, as
 * the end of a pipeline expects. Node ignores SIGPIPE, so without this the
 * write fails with an EPIPE error event and a stack trace.
 */
function onStdoutError (error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') process.exit(EXIT_OK)
  fail(new Error(`cannot write the output: ${error.message}`))
}

/** Writes the one line and exits, once it has been written (stderr may be a pipe). */
function fail (error: unknown): void {
  process.stderr.write(failureLine(error), () => process.exit(EXIT_FAILURE))
}

process.stdout.on('error', onStdoutError)
// Nothing can be reported once stderr itself has gone; the exit status still tells.
process.stderr.on('error', () => {})

const program = buildProgram(packageVersion(), {
  // The service's output is its log: a closed stdout must not end it silently.
  onServe: () => { process.stdout.off('error', onStdoutError) }
})

const end = await runProgram(program, process.argv.slice(2))
// Commander has printed the help, the version or the usage error already.
if (end.error === undefined) process.exitCode = end.status
else fail(end.error)
