// wrk for `npm run bench`: a load generator written in C, so that on a
// small machine the core it is pinned to does the sending and the server's
// core is left to the server. Debian's wrk package is installed with apt-get
// when it is missing and this runs as root; otherwise the benchmark falls
// back to autocannon and says so. Nothing is started here.
//
// env:
//   PETSTORE_BENCH_WRK  the wrk executable, e.g. /usr/bin/wrk (unset: use autocannon)
import { aptInstall, findOnPath } from './apt.js'

export async function start ({ log }) {
  const executable = findOnPath('wrk') ?? install(log)
  return { env: executable === undefined ? {} : { PETSTORE_BENCH_WRK: executable }, stop: async () => {} }
}

/** The executable once installed, or undefined (with the reason logged) when it cannot be. */
function install (log) {
  log('wrk is not on PATH: installing Debian\'s wrk package with apt-get')
  const failure = aptInstall(['wrk'])
  if (failure !== undefined) {
    log(`wrk cannot be installed here (${failure}): autocannon is used`)
    return undefined
  }
  const executable = findOnPath('wrk')
  log(executable === undefined ? 'apt-get installed wrk, yet it is not on PATH: autocannon is used' : `installed wrk with apt-get at ${executable}`)
  return executable
}
