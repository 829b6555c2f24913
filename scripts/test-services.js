// The servers the tests need, started for one `npm test` run and stopped
// after it, whatever happens: each module in scripts/services/ starts one
// kind (PostgreSQL, Redis, …) on loopback ports chosen at run time, in a
// fresh temporary folder, installing its binaries with apt-get when they are
// missing. No server is assumed to be running already. Two modules start
// nothing: chromium.js finds (or installs) the browser that the docs-page
// test launches itself, docker-compose.js the program that reads
// compose.yaml in its test.
//
// A service module exports
//   start({ dir, log }) → Promise<{ env: Record<string, string>, stop(): Promise<void> }>
// where `env` is what the tests read (PETSTORE_TEST_…) and `stop` ends every
// process it started, by PID.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The service modules, by file name under scripts/services/. */
const SERVICES = ['postgres', 'redis', 'chromium', 'docker-compose']

export async function startServices (names = SERVICES) {
  const root = mkdtempSync(join(tmpdir(), 'petstore-test-services-'))
  // Some servers run as a user of their own (PostgreSQL refuses root).
  chmodSync(root, 0o755)
  const started = []
  const stopAll = async () => {
    await Promise.allSettled(started.map(async (service) => await service.stop()))
    rmSync(root, { recursive: true, force: true })
  }
  try {
    for (const name of names) {
      const { start } = await import(`./services/${name}.js`)
      const log = (message) => console.error(`[${name}] ${message}`)
      const dir = join(root, name)
      started.push(await start({ dir, log }))
    }
  } catch (error) {
    await stopAll()
    throw error
  }
  return { env: Object.assign({}, ...started.map((service) => service.env)), stop: stopAll }
}
