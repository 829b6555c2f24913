#!/usr/bin/env node
// What `npm install` (prepare) and `npm start` (prestart) run: the build,
// when TypeScript is installed; when it is not, a production install
// (`npm ci --omit=dev`, docs/DEPLOYING.md: Installing without the dev tools), the
// service runs from the dist/ built beforehand, and this only checks that
// it is there. `tsc -b` rebuilds only what changed: a start with nothing
// changed costs half a second and writes nothing, so instances started
// together do not write into dist/ at once.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(join(root, 'package.json'))

try {
  require.resolve('typescript/bin/tsc')
} catch {
  if (existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) process.exit(0)
  console.error('petstore: dist/ is not built, and TypeScript is not installed to build it (an install without dev dependencies).\n' +
    'Build first where the dev dependencies are: `npm ci && npm run build`, then `npm prune --omit=dev` (docs/DEPLOYING.md: Installing without the dev tools).')
  process.exit(1)
}

const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
process.exit(build.status ?? 1)
