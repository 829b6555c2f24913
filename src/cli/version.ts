// The version `petstore --version` prints: the installed package's own,
// read from its package.json, so that it cannot drift from what was installed.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The `version` of the nearest package.json above this file (the package root, from src/cli or dist/src/cli). */
export function packageVersion (): string {
  const start = dirname(fileURLToPath(import.meta.url))
  for (let dir = start; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }
      if (typeof version !== 'string') throw new Error(`${file} has no version`)
      return version
    }
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`)
  }
}
