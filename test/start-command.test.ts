// The service starts the same way however it is started: `npm start`
// (package.json) and the image (Dockerfile) give node the same options,
// which docs/OPERATING.md ("Memory") explains, an operator's NODE_OPTIONS
// still decides, and the benchmark reads them from package.json
// (test/support/process.ts START_FLAGS).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PROJECT_ROOT, START_FLAGS, startFlags, startScript } from './support/process.js'

const run = promisify(execFile)

/** The options of the Dockerfile's `ENV NODE_OPTIONS="…"`. */
function imageOptions (): string[] {
  const line = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8').split('\n').find((l) => l.startsWith('ENV NODE_OPTIONS='))
  assert.ok(line !== undefined, 'the Dockerfile sets NODE_OPTIONS')
  return (JSON.parse(line.slice('ENV NODE_OPTIONS='.length)) as string).split(' ')
}

/** NODE_OPTIONS as the start script hands it to node, run by sh as npm runs it, with node replaced by a printer. */
async function optionsGiven (callers: string | undefined): Promise<string> {
  const script = startScript().replace('exec node bin/petstore.js serve', 'exec node -p process.env.NODE_OPTIONS')
  const { stdout } = await run('sh', ['-c', script], { env: { PATH: process.env.PATH ?? '', ...(callers === undefined ? {} : { NODE_OPTIONS: callers }) } })
  return stdout.trim()
}

describe('the command that starts the service', () => {
  it('When the image starts the service, then node gets the options npm start gives it', () => {
    assert.deepEqual(imageOptions(), START_FLAGS)
  })

  it('When npm start starts the service, then the young generation is 8 MiB a semi-space, on every Node.js', async () => {
    assert.ok(START_FLAGS.includes('--max-semi-space-size=8'), START_FLAGS.join(' '))
    assert.equal(await optionsGiven(undefined), '--max-semi-space-size=8')
  })

  it('When the operator sets NODE_OPTIONS, then theirs come after the service\'s, so that theirs win', async () => {
    assert.equal(await optionsGiven('--max-semi-space-size=16 --enable-source-maps'), '--max-semi-space-size=8 --max-semi-space-size=16 --enable-source-maps')
  })

  it('When the start script is not the form the benchmark reads, then reading it fails with the script named', () => {
    assert.deepEqual(startFlags('NODE_OPTIONS="$NODE_OPTIONS" exec node bin/petstore.js serve'), [])
    assert.deepEqual(startFlags('NODE_OPTIONS="--a=1 --b $NODE_OPTIONS" exec node bin/petstore.js serve'), ['--a=1', '--b'])
    assert.throws(() => startFlags('node bin/petstore.js serve'), /start script is not/)
  })
})
