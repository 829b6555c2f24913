// wrk for `npm run bench`: a load generator written in C, so that on a
// small machine the core it is pinned to does the sending and the server's
// core is left to the server. Debian's wrk package is installed with apt-get
// when it is missing and this runs as root; otherwise the benchmark falls
// back to autocannon and says so. Nothing is started here.
//
// env:
//   PETSTORE_BENCH_WRK  the wrk executable, e.g. /usr/bin/wrk (unset: use autocannon)
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'

export async function start ({ log }) {
  const executable = find() ?? install(log)
  return { env: executable === undefined ? {} : { PETSTORE_BENCH_WRK: executable }, stop: async () => {} }
}

function find () {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (folder !== '' && existsSync(join(folder, 'wrk'))) return join(folder, 'wrk')
  }
  return undefined
}

/** The executable once installed, or undefined (with the reason logged) when it cannot be. */
function install (log) {
  const root = process.getuid?.() === 0
  if (!root || !onPath('apt-get')) {
    log(`wrk is not on PATH and cannot be installed here (${root ? 'no apt-get' : 'not root'}): autocannon is used`)
    return undefined
  }
  log('wrk is not on PATH: installing Debian\'s wrk package with apt-get')
  for (const args of [['update'], ['install', '-y', 'wrk']]) {
    const result = spawnSync('apt-get', args, {
      // apt-get's progress goes to stderr, so that the report on stdout stays readable.
      stdio: ['ignore', process.stderr, process.stderr],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    })
    if (result.status !== 0) {
      log(`apt-get ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}): autocannon is used`)
      return undefined
    }
  }
  const executable = find()
  log(executable === undefined ? 'apt-get installed wrk, yet it is not on PATH: autocannon is used' : `installed wrk with apt-get at ${executable}`)
  return executable
}

function onPath (command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}
