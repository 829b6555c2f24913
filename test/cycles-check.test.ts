// The import-cycle check that `npm test` runs before the tests
// (scripts/check-cycles.js), fed small source trees in a temporary folder:
// it must report every cycle of files and of top-level modules, type-only
// imports included, and nothing in a tree whose imports flow one way.
import { afterEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PROJECT_ROOT, makeTempDir, removeTempDir } from './support/process.js'

/** scripts/check-cycles.js: plain JavaScript outside the compiled tree, loaded by its path. */
interface CyclesCheck {
  checkCycles: (root: string, folder?: string) => string[]
}

async function loadCheck (): Promise<CyclesCheck['checkCycles']> {
  const { checkCycles } = await import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'check-cycles.js')).href) as CyclesCheck
  return checkCycles
}

function write (root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
}

describe('the import-cycle check', () => {
  let root: string | undefined

  afterEach(() => {
    removeTempDir(root)
    root = undefined
  })

  it('When files import each other, a top-level file and a folder import each other, and two folders do by a type only, then exactly those cycles are reported', async () => {
    // Arrange
    const checkCycles = await loadCheck()
    root = makeTempDir()
    write(root, {
      // Files: server.ts → workers/supervisor.ts → server.ts.
      'src/server.ts': "import { startWorkers } from './workers/supervisor.js'\nexport const serve = startWorkers\n",
      'src/workers/supervisor.ts': "import { listenOn } from '../server.js'\nexport const startWorkers = listenOn\n",
      // Modules, not files: config.ts → keys/tokens.ts; keys/usage.ts → config.ts.
      'src/config.ts': "import { inspectToken } from './keys/tokens.js'\nexport const FLUSH_MS = 10\nexport const check = inspectToken\n",
      'src/keys/tokens.ts': 'export const inspectToken = (token: string): boolean => token.length > 0\n',
      'src/keys/usage.ts': "import { FLUSH_MS } from '../config.js'\nexport const flushMs = FLUSH_MS\n",
      // Modules by type-only imports and a re-export: http/app.ts → plugins/json-body.ts → http/json.ts.
      'src/http/app.ts': "export { bodyPlugin } from '../plugins/json-body.js'\n",
      'src/http/json.ts': 'export interface JsonBody { text: string }\n',
      'src/plugins/json-body.ts': "import type { JsonBody } from '../http/json.js'\nexport const bodyPlugin = (body: JsonBody): string => body.text\n",
      // Packages and builtins are not part of the graph.
      'src/db/open.ts': "import { readFileSync } from 'node:fs'\nimport pg from 'pg'\nexport const open = [readFileSync, pg]\n"
    })

    // Act
    const cycles = checkCycles(root)

    // Assert
    assert.deepEqual(cycles, [
      'files: src/server.ts → src/workers/supervisor.ts → src/server.ts',
      'modules: config → keys → config',
      'modules: http → plugins → http',
      'modules: server → workers → server'
    ])
  })

  it('When the same tree imports one way only, through a module that imports nothing back, then nothing is reported', async () => {
    // Arrange
    const checkCycles = await loadCheck()
    root = makeTempDir()
    write(root, {
      'src/server.ts': "import { startWorkers } from './workers/supervisor.js'\nimport { listenOn } from './run/service.js'\nexport const serve = [startWorkers, listenOn]\n",
      'src/workers/supervisor.ts': "import { listenOn } from '../run/service.js'\nexport const startWorkers = listenOn\n",
      'src/run/service.ts': "import { check } from '../config.js'\nexport const listenOn = check\n",
      'src/config.ts': "import { inspectToken } from './keys/tokens.js'\nimport { FLUSH_MS } from './keys/usage.js'\nexport const check = [inspectToken, FLUSH_MS]\n",
      'src/keys/tokens.ts': 'export const inspectToken = (token: string): boolean => token.length > 0\n',
      'src/keys/usage.ts': "import { inspectToken } from './tokens.js'\nexport const FLUSH_MS = 10\nexport const same = inspectToken\n",
      'src/http/app.ts': "export { bodyPlugin } from '../plugins/json-body.js'\n",
      'src/plugins/json.ts': 'export interface JsonBody { text: string }\n',
      'src/plugins/json-body.ts': "import type { JsonBody } from './json.js'\nexport const bodyPlugin = (body: JsonBody): string => body.text\n"
    })

    // Act
    const cycles = checkCycles(root)

    // Assert
    assert.deepEqual(cycles, [])
  })

  it('When a file imports itself and three files import in a ring, then each is one cycle, every step named', async () => {
    // Arrange
    const checkCycles = await loadCheck()
    root = makeTempDir()
    write(root, {
      'src/lib/self.ts': "import * as me from './self.js'\nexport const itself = me\n",
      'src/lib/a.ts': "import { b } from './b.js'\nexport const a = (): unknown => b\n",
      'src/lib/b.ts': "import { c } from './c.js'\nexport const b = (): unknown => c\n",
      'src/lib/c.ts': "import type { a } from './a.js'\nexport const c = (f: typeof a): unknown => f\n"
    })

    // Act
    const cycles = checkCycles(root)

    // Assert
    assert.deepEqual(cycles, [
      'files: src/lib/a.ts → src/lib/b.ts → src/lib/c.ts → src/lib/a.ts',
      'files: src/lib/self.ts → src/lib/self.ts'
    ])
  })
})
