// What the services share: finding a program on PATH, and installing a
// missing one from Debian's packages with apt-get, which needs root. The
// package lists are refreshed once per process, however many installs follow.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'

/** The first of `names` found in a folder of PATH, as a path; undefined when none is. */
export function findOnPath (...names) {
  for (const name of names) {
    for (const folder of (process.env.PATH ?? '').split(delimiter)) {
      if (folder !== '' && existsSync(join(folder, name))) return join(folder, name)
    }
  }
  return undefined
}

let updated = false

/** `apt-get install -y ARGS`: undefined once installed, or why it could not be. */
export function aptInstall (args) {
  if (process.getuid?.() !== 0) return 'not root'
  if (findOnPath('apt-get') === undefined) return 'no apt-get'
  if (!updated) {
    const failure = aptGet(['update'])
    if (failure !== undefined) return failure
    updated = true
  }
  return aptGet(['install', '-y', ...args])
}

/** One apt-get command: undefined when it succeeded, else why not. */
function aptGet (command) {
  const result = spawnSync('apt-get', command, {
    // apt-get's progress goes to stderr, so that the report on stdout stays readable.
    stdio: ['ignore', process.stderr, process.stderr],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  })
  return result.status === 0 ? undefined : `apt-get ${command.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})`
}
