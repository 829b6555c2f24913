// docker-compose for the test of compose.yaml, which only asks it to read
// and resolve the file (`docker-compose config`): no daemon, no image, no
// container. Debian's docker-compose package (Compose 1.29) is installed with
// apt-get when it is missing. Nothing is started here.
//
// env:
//   PETSTORE_TEST_DOCKER_COMPOSE  the executable, e.g. /usr/bin/docker-compose
import { aptInstall, findOnPath } from './apt.js'

export async function start ({ log }) {
  const executable = findOnPath('docker-compose') ?? install(log)
  return { env: { PETSTORE_TEST_DOCKER_COMPOSE: executable }, stop: async () => {} }
}

function install (log) {
  log('docker-compose is not on PATH: installing Debian\'s docker-compose package with apt-get')
  const failure = aptInstall(['--no-install-recommends', 'docker-compose'])
  if (failure !== undefined) throw new Error(`${failure}: install docker-compose yourself, or run npm test as root on Debian`)
  const executable = findOnPath('docker-compose')
  if (executable === undefined) throw new Error('apt-get installed docker-compose, yet it is not on PATH')
  log(`installed docker-compose with apt-get at ${executable}`)
  return executable
}
