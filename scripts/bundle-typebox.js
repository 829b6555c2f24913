#!/usr/bin/env node
// The last step of `npm run build`: replaces tsc's output of
// src/schemas/typebox.ts, which imports TypeBox's some 680 modules, with one
// file that holds them all, made by esbuild (docs/INTERNALS.md, section
// "Start-up"). A build that changed nothing writes nothing: the bundle is
// kept while it is newer than its source and than the TypeBox installed,
// so that instances started together (`npm start` builds first) do not
// write it at once; when written, it is written whole, then renamed.
import { existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const source = join(root, 'src', 'schemas', 'typebox.ts')
const output = join(root, 'dist', 'src', 'schemas', 'typebox.js')
// npm writes its record of what is installed at every install that changes it.
const installed = join(root, 'node_modules', '.package-lock.json')
const BANNER = '// TypeBox, bundled by scripts/bundle-typebox.js from src/schemas/typebox.ts.'

const bundled = existsSync(output) && readFileSync(output, 'utf8').startsWith(BANNER)
const newer = bundled && [source, installed].every((input) => existsSync(input) && statSync(input).mtimeMs <= statSync(output).mtimeMs)
if (!newer) {
  const { build } = await import('esbuild')
  const temporary = `${output}.${process.pid}.tmp`
  await build({
    entryPoints: [source],
    outfile: temporary,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: { js: BANNER },
    logLevel: 'warning'
  })
  renameSync(temporary, output)
  // tsc's source map is of the file replaced.
  rmSync(`${output}.map`, { force: true })
}
