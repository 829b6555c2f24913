#!/usr/bin/env node
// Runs every compiled test file with Node's test runner. The files are
// listed here because `node --test` reads directory and glob arguments
// differently from one Node version to the next.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const root = 'dist/test'
const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.js'))
  .map((file) => join(root, file))
  .sort()

if (files.length === 0) {
  console.error(`no test files under ${root}: run \`npm run build\` first`)
  process.exit(1)
}

const result = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...process.argv.slice(2), ...files], { stdio: 'inherit' })
process.exit(result.status ?? 1)
