#!/usr/bin/env node
// `npm run test:image`: builds the service's image from the Dockerfile, as
// it is, and tests the container (test/image/container.image.ts). Slow, so
// not part of `npm test`; CI runs it after.
//
// No image registry is needed: the base image (NODE_IMAGE) is made as
// `npm run image:base` makes it (scripts/image-base.js). npm inside the
// build reaches the registry as this machine's npm does: the machine's
// global npm configuration and CA bundle (found as npm finds it,
// scripts/npm-ca.js) are mounted read-only, with an npmrc naming the bundle.
//
// The test also runs two containers on PostgreSQL and Redis, started here
// as `npm test` starts them (scripts/test-services.js).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BASE, CACHE, cleanEnv, ensureBase, ensureTools, output, podmanEnv, run } from './image-base.js'
import { npmCaBundle } from './npm-ca.js'
import { startServices } from './test-services.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const IMAGE = 'localhost/petstore:test'
const TEST = join(ROOT, 'dist', 'test', 'image', 'container.image.js')

const started = Date.now()

/** This machine's global npm configuration and CA bundle, lent to the npm in the build. */
function npmMounts () {
  const globalConfig = output('npm', ['config', 'get', 'globalconfig'], { env: cleanEnv() })
  const cafile = npmCaBundle({ npmEnv: cleanEnv() })
  const mounts = []
  // The official image's npm reads /usr/local/etc/npmrc.
  if (globalConfig !== undefined && existsSync(globalConfig)) mounts.push('-v', `${globalConfig}:/usr/local/etc/npmrc:ro`)
  if (cafile === undefined) {
    console.log('test:image: no CA bundle found (npm cafile, NODE_EXTRA_CA_CERTS, /etc/ssl/certs/ca-certificates.crt): the build\'s npm trusts its own')
    return mounts
  }
  // The bundle at its own path, and named in the user npmrc of the build's
  // root, which npm reads after the global one: a global npmrc that names
  // no cafile, or none at all, still leaves the build with the bundle.
  const userConfig = join(CACHE, 'build-npmrc')
  writeFileSync(userConfig, `cafile=${cafile}\n`)
  mounts.push('-v', `${cafile}:${cafile}:ro`, '-v', `${userConfig}:/root/.npmrc:ro`)
  console.log(`test:image: the build's npm trusts ${cafile}`)
  return mounts
}

function size (env, image) {
  return Number(output('podman', ['image', 'inspect', '--format', '{{.Size}}', image], { env }))
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`

ensureTools()
const env = podmanEnv()
ensureBase(env)

console.log(`test:image: building ${IMAGE} from the Dockerfile on ${BASE}`)
const previous = output('podman', ['image', 'inspect', '--format', '{{.Id}}', IMAGE], { env })
const buildStarted = Date.now()
run('podman', ['build', '--network', 'host', ...npmMounts(),
  // Docker's format: OCI images have no HEALTHCHECK, and buildah drops it from them.
  '--format', 'docker',
  '--build-arg', `NODE_IMAGE=${BASE}`, '--tag', IMAGE, '--file', join(ROOT, 'Dockerfile'), ROOT], { env })
const buildSeconds = (Date.now() - buildStarted) / 1000
// The last run's image, when this build replaced it, by its ID, so that
// runs do not pile up images (the build cache stays).
if (previous !== undefined && previous !== output('podman', ['image', 'inspect', '--format', '{{.Id}}', IMAGE], { env })) {
  spawnSync('podman', ['rmi', previous], { env, stdio: 'ignore' })
}

const imageSize = size(env, IMAGE)
const baseSize = size(env, BASE)
console.log(`test:image: built in ${buildSeconds.toFixed(0)} s; ${IMAGE} ${mb(imageSize)}, its base ${mb(baseSize)}, added ${mb(imageSize - baseSize)}`)

// The test is compiled with the rest (`npm run build`); it is named
// *.image.ts so that `npm test` does not run it.
run('npm', ['run', 'build', '--silent'], { cwd: ROOT, env: cleanEnv() })
// PostgreSQL and Redis for the containers that share them, as `npm test` starts them.
const services = await startServices(['postgres', 'redis'])
// What podman holds before the test, to find what it leaves behind.
const leftovers = () => ['ps', 'volume'].flatMap((kind) =>
  (output('podman', kind === 'ps' ? ['ps', '--all', '--quiet', '--no-trunc'] : ['volume', 'ls', '--quiet'], { env }) ?? '')
    .split('\n').filter((id) => id !== '').map((id) => `${kind === 'ps' ? 'container' : 'volume'} ${id}`))
const before = new Set(leftovers())
// Not spawnSync: the servers' output comes through this process's event loop.
const runner = spawn(process.execPath, ['--test', '--test-reporter=spec', TEST], {
  stdio: 'inherit',
  env: { ...env, ...services.env, PETSTORE_IMAGE: IMAGE }
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => runner.kill(signal))
const code = await new Promise((resolve) => runner.on('close', (status) => resolve(status ?? 1)))
await services.stop()
// The test removes what it creates, by name; anything new is a leak.
const left = leftovers().filter((item) => !before.has(item))
if (left.length > 0) console.error(`test:image: FAILED: the test left behind ${left.join(', ')}`)
console.log(`test:image: ${((Date.now() - started) / 1000).toFixed(0)} s in all`)
process.exit(left.length > 0 ? 1 : code)
