// The `petstore` program run in the test's own process, as main.ts runs
// it: the same commands, parsing, output and one-line failures, without a
// Node.js start each time. What the process adds (its exit, a closed
// stdout, a command that must end by itself) is held by the spawned cases
// of test/e2e/cli.test.ts.
import { Readable } from 'node:stream'
import { buildProgram, failureLine, runProgram } from '../../src/cli/program.js'
import { packageVersion } from '../../src/cli/version.js'
import { SERVICE_VARIABLES, type CliResult } from './process.js'

/**
 * Runs `petstore ARGS` here with exactly `env` of the service's variables
 * (as `runCli` gives a child) and `input` on its standard input; reported
 * as `runCli` reports a process. The environment is the process's own for
 * the while: calls must not overlap.
 */
export async function runHere (args: readonly string[], env: Record<string, string> = {}, input = ''): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  const program = buildProgram(packageVersion(), {
    onServe: () => { throw new Error('runHere is for command lines that start no service') },
    io: { out: (text) => { stdout += text }, err: (text) => { stderr += text }, stdin: () => Readable.from([input]) }
  })
  const names = [...new Set([...SERVICE_VARIABLES, ...Object.keys(env)])]
  const saved = new Map(names.map((name) => [name, process.env[name]]))
  for (const name of SERVICE_VARIABLES) Reflect.deleteProperty(process.env, name)
  Object.assign(process.env, env)
  try {
    const end = await runProgram(program, args)
    if (end.error !== undefined) stderr += failureLine(end.error)
    return { code: end.status, signal: null, stdout, stderr }
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) Reflect.deleteProperty(process.env, name)
      else process.env[name] = value
    }
  }
}

/** `runHere`, failing with the whole output unless the command succeeded. */
export async function runHereOk (args: readonly string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  const result = await runHere(args, env, input)
  if (result.code !== 0) throw new Error(`petstore ${args.join(' ')} exited with ${result.code}:\n${result.stdout}${result.stderr}`)
  return result
}
