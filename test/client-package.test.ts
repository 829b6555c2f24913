// The client as another project gets it (client/README.md: Install): the
// tarball `npm pack` makes in client/, installed into a project of its own
// outside this repository, imported there by Node.js and type-checked by
// TypeScript. A file left out of the package, a dependency not declared or
// an import that reaches back into this repository fails here.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { lstatSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, test } from 'node:test'
import { PROJECT_ROOT, makeTempDir, removeTempDir } from './support/process.js'

const run = promisify(execFile)
/** Packing (which compiles the library first), installing and checking take about 15 s on a busy two-core machine. */
const TIMEOUT_MS = 60_000

/** The parent's environment without npm's own variables: when `npm test` runs this, the packing and installing must not inherit the root project's npm settings. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')))

interface Packed {
  filename: string
  files: Array<{ path: string }>
  bundled: string[]
}

let dir: string | undefined

before(() => { dir = makeTempDir() })
after(() => { removeTempDir(dir) })

/** npm with `args` in `cwd`: its standard output. */
async function npm (cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: ENV, timeout: TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

/**
 * Installs `tarball` with its dependencies from npm's cache, where the
 * root's install put them; where the cache lacks one, from the registry.
 */
async function install (project: string, tarball: string): Promise<void> {
  const flags = ['--no-audit', '--no-fund']
  try {
    await npm(project, ['install', '--offline', ...flags, tarball])
  } catch (error) {
    if (!String((error as { stderr?: string }).stderr).includes('ENOTCACHED')) throw error
    await npm(project, ['install', '--prefer-offline', ...flags, tarball])
  }
}

test('When the client is packed with npm pack and the tarball installed in a project of its own, then Node.js imports it there and TypeScript finds its types', { timeout: 3 * TIMEOUT_MS }, async () => {
  // Arrange
  assert.ok(dir !== undefined)
  const project = join(dir, 'consumer')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }))
  writeFileSync(join(project, 'check.ts'), [
    "import { PetstoreClient, PetstoreError, type Pet, type paths } from 'petstore-client'",
    "const client = new PetstoreClient({ baseUrl: 'http://127.0.0.1:8080/v1', apiKey: 'pet_test_unused' })",
    "type ListPets = paths['/pets']['get']['responses'][200]['content']['application/json']",
    'export const checked: [PetstoreClient, Pet[], ListPets | undefined, typeof PetstoreError] = [client, [], undefined, PetstoreError]',
    ''
  ].join('\n'))

  // Act
  const [packed] = JSON.parse(await npm(join(PROJECT_ROOT, 'client'), ['pack', '--json', '--pack-destination', dir])) as Packed[]
  assert.ok(packed !== undefined)
  await install(project, join(dir, packed.filename))
  const { stdout: imported } = await run(process.execPath, ['--input-type=module', '-e', [
    "const client = await import('petstore-client')",
    'console.log(JSON.stringify(Object.fromEntries(Object.entries(client).map(([name, value]) => [name, typeof value]))))'
  ].join('\n')], { cwd: project, env: ENV, timeout: TIMEOUT_MS })
  const tsc = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const typeChecked = await run(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', 'check.ts'],
    { cwd: project, env: ENV, timeout: TIMEOUT_MS }).then(() => 'no errors', (error: { stdout?: string }) => error.stdout ?? String(error))

  // Assert
  const paths = packed.files.map((file) => file.path)
  for (const path of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/client.d.ts', 'dist/generated/openapi.d.ts']) {
    assert.ok(paths.includes(path), `${path} is not in the tarball: ${paths.join(', ')}`)
  }
  assert.deepEqual(paths.filter((path) => !path.startsWith('dist/') && path !== 'package.json' && path !== 'README.md'), [], 'only the compiled library, its README and package.json')
  assert.deepEqual(paths.filter((path) => path.startsWith('dist/test/') || path.startsWith('dist/scripts/') || path.endsWith('.map')), [])
  // Installed from the tarball, not linked into this repository as a workspace is.
  assert.equal(lstatSync(join(project, 'node_modules', 'petstore-client')).isSymbolicLink(), false)
  for (const dependency of ['openapi-fetch', 'lossless-json', 'http-link-header', 'standardwebhooks']) {
    assert.equal(lstatSync(join(project, 'node_modules', dependency)).isDirectory(), true, `${dependency} was not installed`)
  }
  const exported = JSON.parse(imported) as Record<string, string>
  assert.equal(exported.PetstoreClient, 'function')
  assert.equal(exported.verifyWebhook, 'function')
  assert.equal(typeChecked, 'no errors')
})
