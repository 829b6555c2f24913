// The token `petstore keys find` traces, read on standard input: never
// taken from the command line, which shells keep in their history.
import { createInterface } from 'node:readline/promises'
import { CommandFailure } from '../errors.js'
import type { CommandIo } from '../io.js'

/** More than any token, with room for a line ending: standard input longer than this is not one token. */
const MAX_TOKEN_INPUT = 1024

/** The token on standard input, without one trailing line ending. From a terminal, one line after a prompt on stderr; from a pipe or a file, all of it. */
export async function readToken (io: CommandIo): Promise<string> {
  let text = ''
  const stdin = io.stdin()
  if (stdin.isTTY === true) {
    // The prompt is for a person at that terminal, on the process's stderr.
    const prompt = createInterface({ input: stdin, output: process.stderr, terminal: true })
    try {
      text = await prompt.question('Token: ')
    } finally {
      prompt.close()
    }
  } else {
    for await (const chunk of stdin) {
      text += String(chunk)
      if (text.length > MAX_TOKEN_INPUT) throw new CommandFailure('standard input holds more than one token; give it the token alone')
    }
  }
  const token = text.replace(/\r?\n$/, '')
  if (token === '') {
    throw new CommandFailure('no token on standard input; give it there, never on the command line: `petstore keys find < FILE` or `… | petstore keys find`')
  }
  return token
}
