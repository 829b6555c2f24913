// Chromium for the docs-page test, which drives it with playwright-core.
// Playwright's own browser downloads are not used: the browser is the
// system's, from Debian's chromium package, installed with apt-get when it
// is missing. Nothing is started here; the test launches the browser itself.
//
// env:
//   PETSTORE_TEST_CHROMIUM  the browser's executable, e.g. /usr/bin/chromium
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { aptInstall, findOnPath } from './apt.js'

/** Names the browser goes by on PATH (Debian: chromium; some other distributions: chromium-browser). */
const NAMES = ['chromium', 'chromium-browser']
/** Where Debian puts it, for a PATH that lacks /usr/bin (its /usr/bin/chromium is a wrapper around the latter). */
const KNOWN = ['/usr/bin/chromium', '/usr/lib/chromium/chromium']

export async function start ({ log }) {
  const executable = find() ?? install(log)
  const version = spawnSync(executable, ['--version'], { encoding: 'utf8', timeout: 30_000 })
  if (version.status !== 0) {
    throw new Error(`${executable} --version failed (${version.error?.message ?? `exit ${version.status}`}):\n${version.stdout ?? ''}${version.stderr ?? ''}`)
  }
  log(`${version.stdout.trim()} at ${executable}`)
  return { env: { PETSTORE_TEST_CHROMIUM: executable }, stop: async () => {} }
}

function find () {
  return findOnPath(...NAMES) ?? KNOWN.find((path) => existsSync(path))
}

function install (log) {
  log('chromium is not on PATH: installing Debian\'s chromium package with apt-get')
  // Its recommends are desktop daemons (udev, upower) that a headless browser does without.
  const failure = aptInstall(['--no-install-recommends', 'chromium'])
  if (failure !== undefined) throw new Error(`${failure}: install Chromium yourself, or run npm test as root on Debian`)
  const executable = find()
  if (executable === undefined) throw new Error('apt-get installed chromium, yet no chromium executable is found')
  log(`installed chromium with apt-get at ${executable}`)
  return executable
}
