// The docs check that `npm test` runs after the build (scripts/check-docs.js),
// fed a small docs tree in a temporary folder: it must report every path,
// anchor, npm script and petstore command named that does not exist, in code
// or in plain prose, and every npx petstore, and nothing that only looks like
// a path.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PROJECT_ROOT, makeTempDir, removeTempDir } from './support/process.js'

/** scripts/check-docs.js: plain JavaScript outside the compiled tree, loaded by its path. */
interface DocsCheck {
  checkDocs: (root: string, options?: { commands?: Record<string, string[]> }) => Promise<string[]>
}

/** The CLI's commands as the check is given them: name → subcommands. */
const COMMANDS = { serve: [], keys: ['create', 'list'] }

function write (root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
}

describe('the docs check', () => {
  let checkDocs: DocsCheck['checkDocs']
  let root: string | undefined

  before(async () => {
    ({ checkDocs } = await import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'check-docs.js')).href) as DocsCheck)
  })

  after(() => removeTempDir(root))

  it('When the docs name a missing path, a bad anchor, a missing npm script, an unknown command and npx petstore, then exactly those are reported, file and line', async () => {
    // Arrange
    root = makeTempDir()
    write(root, {
      'package.json': JSON.stringify({ name: 'petstore', scripts: { build: 'tsc', test: 'node run.js' } }),
      '.gitignore': 'dist/\ndata/\n',
      'src/app.ts': '',
      'bin/petstore.js': '',
      'README.md': [
        '# The store', // 1
        '',
        'The app is `src/app.ts:12`, built to `dist/src/app.js`; the old one was `src/gone.ts`.', // 3
        '',
        'See [leaked tokens](docs/KEYS.md#leaked-tokens) and [nothing](docs/KEYS.md#no-such-heading).', // 5
        '',
        'Not paths: `/v1/pets`, `/var/lib/petstore`, `backup.db`, `data/key.json`, `application/json`, `https://example.com/src/x.ts`.', // 7
        '',
        '```sh', // 9
        'npm run build && npm test', // 10
        'npm run bundle -- --fast', // 11
        'TOKEN=$(npx petstore keys create --plan free | tail -n 1)', // 12
        'node bin/petstore.js keys list', // 13
        'node bin/petstore.js keyz list', // 14
        '```',
        '',
        'The log line `petstore started`; `petstore serve --help` lists the variables.', // 17
        '',
        'Proved by the tests (src/app.ts, src/old.test.ts); not ours: example.com/src/x.ts, /etc/petstore/conf.json, [a link](src/app.ts).', // 19
        ''
      ].join('\n'),
      'docs/KEYS.md': [
        '# Keys', // 1
        '',
        '## Leaked tokens', // 3
        '',
        'Back to [the top](#keys), on to [webhooks](WEBHOOKS.md).', // 5
        '',
        '```sh', // 7
        'cd /var/lib/petstore && rm -f petstore.db-wal', // 8
        'node bin/petstore.js serve', // 9
        '```',
        ''
      ].join('\n')
    })

    // Act
    const problems = await checkDocs(root, { commands: COMMANDS })

    // Assert
    assert.deepEqual(problems, [
      'README.md:3: `src/gone.ts` does not exist',
      'README.md:5: link to docs/KEYS.md#no-such-heading: docs/KEYS.md has no heading #no-such-heading',
      'README.md:11: `npm run bundle`: no script "bundle" in package.json',
      'README.md:12: `npx petstore`: outside the project npx fetches and runs the registry\'s package of that name; write `node bin/petstore.js` (from the project\'s root) or `npm start`',
      'README.md:14: `petstore keyz`: no such command (the commands: serve, keys)',
      'README.md:19: `src/old.test.ts` does not exist',
      'docs/KEYS.md:5: link to WEBHOOKS.md: docs/WEBHOOKS.md does not exist',
      'docs/KEYS.md:9: `node bin/petstore.js` runs after `cd /var/lib/petstore`, outside the project: it would not be found there (give the checkout\'s absolute path)'
    ])
  })
})
