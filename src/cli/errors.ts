// How the `petstore` command ends, as shells and scripts read it.

/** The command did what was asked. */
export const EXIT_OK = 0
/** The command was well formed but could not do its work: configuration, database, no such key. */
export const EXIT_FAILURE = 1
/** The command line itself was wrong: unknown command or option, missing or invalid value (2, as the shell's builtins, Python's argparse and Rust's clap use). */
export const EXIT_USAGE = 2

/** A failure to tell the operator in one line, without a stack trace: it is about their setup, not a fault of the program. */
export class CommandFailure extends Error {
  override name = 'CommandFailure'
}

/** A message on one line: line breaks and the white space around them become one space. */
export function oneLine (text: string): string {
  // Split rather than a pattern such as /\s*\n\s*/, which backtracks quadratically on long runs of white space.
  return text.split('\n').map((line) => line.trim()).filter((line) => line !== '').join(' ')
}
