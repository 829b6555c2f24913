// The CA bundle this machine's npm trusts, found as npm finds it, so that
// the npm inside an image build (scripts/test-image.js) can be lent the same.
// A Node.js taken from the npm registry has its own prefix, so its npm reads
// another global npmrc than the system's: the file that names the system's
// `cafile` is then not read, and the CA comes from NODE_EXTRA_CA_CERTS or
// the system's store instead.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

/**
 * The first of these that names a file: the `cafile` of the npm that runs
 * this script (`npm_config_cafile`), npm's `cafile` setting asked afresh
 * with `npmEnv`, NODE_EXTRA_CA_CERTS, the system's bundle. undefined when
 * none does. `env` and `npmConfig` are parameters so that each case can be
 * run on its own.
 */
export function npmCaBundle ({ env = process.env, npmEnv = env, npmConfig = askNpm, systemBundle = SYSTEM_BUNDLE } = {}) {
  const candidates = [env.npm_config_cafile, npmConfig('cafile', npmEnv), env.NODE_EXTRA_CA_CERTS, systemBundle]
  // npm prints `null` for a setting that is not set.
  return candidates.find((file) => file !== undefined && file !== '' && file !== 'null' && existsSync(file))
}

function askNpm (name, env) {
  const result = spawnSync('npm', ['config', 'get', name], { encoding: 'utf8', env })
  return result.status === 0 ? result.stdout.trim() : undefined
}
