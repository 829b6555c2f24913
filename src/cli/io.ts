// Where a command's text goes and comes from: the process's standard
// streams when `petstore` runs, or strings the caller holds when the CLI's
// tests run a command line in their own process (test/e2e/cli.test.ts).

/** Standard output and error, and standard input (the token `keys find` reads). */
export interface CommandIo {
  out: (text: string) => void
  err: (text: string) => void
  /** Read only when a command needs it: a pipe or a terminal is opened on first use. */
  stdin: () => NodeJS.ReadableStream & { isTTY?: boolean }
}

export const PROCESS_IO: CommandIo = {
  out: (text) => { process.stdout.write(text) },
  err: (text) => { process.stderr.write(text) },
  stdin: () => process.stdin
}
