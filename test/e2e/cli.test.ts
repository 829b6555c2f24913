// The `petstore` command as operators and their scripts meet it, judged by
// its exit status, stdout and stderr. Most cases run the program main.ts
// runs in this process (`runHere`, test/support/cli-here.ts), a Node.js
// start each saved; the spawned cases hold what the process adds to it:
// its exit, a reader of stdout that goes away, a database that does not
// answer, a command that ends by itself once its work is done.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { openSqlite } from '../../src/db/sqlite/storage.js'
import { displayWidth } from '../../src/cli/table.js'
import { packageVersion } from '../../src/cli/version.js'
import { runHere, runHereOk } from '../support/cli-here.js'
import { bearer, buildKeyRecord } from '../support/fixtures.js'
import { freePort } from '../support/ports.js'
import { freshPostgresDatabase } from '../support/postgres.js'
import {
  CLI, PROJECT_ROOT, createKey, databaseFile, makeTempDir, pollUntil, removeTempDir, runCli, runCliOk, spawnCli, sqliteUrl, startServer, withTimeout,
  type CliResult, type ServerProcess
} from '../support/process.js'

const TOKEN = /^pet_live_[0-9A-Za-z]{36}$/
/** What a stack trace line looks like; none may reach an operator. */
const STACK_LINE = /^\s+at /m
/** PostgreSQL is asked to connect within 5 s; the command must have given up shortly after. */
const DATABASE_GIVE_UP_MS = 10_000

function lines (text: string): string[] {
  return text.split('\n').filter((line) => line !== '')
}

/**
 * Every variable src/config.ts reads, as it reads them: `env, 'NAME'`
 * (through its helpers), `env.NAME` or `env['NAME']`.
 */
function configVariables (): string[] {
  const source = readFileSync(join(PROJECT_ROOT, 'src', 'config.ts'), 'utf8')
  const reads = source.matchAll(/\benv(?:, '([A-Z][A-Z0-9_]*)'|\.([A-Z][A-Z0-9_]*)\b|\['([A-Z][A-Z0-9_]*)'\])/g)
  return [...new Set([...reads].map((match) => match[1] ?? match[2] ?? match[3] ?? ''))].sort()
}

/** Fails with the whole output unless the command failed with `code` and one line on stderr, as a script expects of it. */
function assertOneLineFailure (result: CliResult, code: number): string {
  const output = `stdout: ${result.stdout}\nstderr: ${result.stderr}`
  assert.equal(result.code, code, output)
  assert.equal(result.stdout, '', output)
  assert.doesNotMatch(result.stderr, STACK_LINE, output)
  assert.equal(lines(result.stderr).length, 1, output)
  assert.match(result.stderr, /^petstore: /, output)
  return result.stderr.trimEnd()
}

/** Keys straight into the database: the command would take a process each. */
async function insertKeys (dir: string, count: number, name: (i: number) => string): Promise<void> {
  const storage = openSqlite(sqliteUrl(dir))
  try {
    for (let i = 0; i < count; i++) {
      await storage.createApiKey(buildKeyRecord({ name: name(i), tokenHash: `hash-${i}`, createdAt: Date.now() }))
    }
  } finally {
    await storage.close()
  }
}

describe('petstore, its help and version', { timeout: 60_000 }, () => {
  const commands = [[], ['serve'], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'show'], ['keys', 'update'], ['keys', 'roll'], ['keys', 'find'], ['keys', 'revoke'],
    ['webhooks'], ['webhooks', 'create'], ['webhooks', 'list'], ['webhooks', 'show'], ['webhooks', 'update'], ['webhooks', 'delete'], ['webhooks', 'deliveries'], ['webhooks', 'roll-secret'], ['webhooks', 'resend'], ['webhooks', 'test']]
  for (const command of commands) {
    it(`When \`petstore ${[...command, '--help'].join(' ')}\` is run, then it prints that command's usage on stdout and exits 0`, async () => {
      // Act
      const result = await runHere([...command, '--help'])

      // Assert
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stderr, '')
      assert.match(result.stdout, new RegExp(`^Usage: ${['petstore', ...command].join(' ')} `))
      assert.match(result.stdout, /Exit status: 0 on success, 1 .*, 2 on bad usage/)
    })
  }

  it('When `petstore serve --help` is run, then it lists every environment variable the configuration reads and points to the README', async () => {
    // Arrange: the names are taken from the source, so that a variable added there without a line of help fails here.
    const variables = configVariables()
    assert.ok(variables.length >= 15, `only ${variables.join(', ')} found in src/config.ts: has the way it reads the environment changed?`)

    // Act
    const { stdout } = await runHere(['serve', '--help'])

    // Assert
    const listed = new Set([...stdout.matchAll(/^ {2}([A-Z][A-Z0-9_]*) /gm)].map((match) => match[1]))
    assert.deepEqual(variables.filter((name) => !listed.has(name)), [], stdout)
    assert.match(stdout, /README\.md/)
  })

  for (const flag of ['--version', '-V']) {
    it(`When \`petstore ${flag}\` is run, then it prints the installed package's version alone and exits 0`, async () => {
      // Arrange
      const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }

      // Act
      const result = await runHere([flag])

      // Assert
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, `${version}\n`)
      assert.equal(result.stderr, '')
    })
  }
})

describe('petstore, on bad usage', { timeout: 60_000 }, () => {
  const cases: Array<[string, string[], RegExp, string]> = [
    ['an unknown command', ['adopt'], /^petstore: unknown command 'adopt'$/, 'petstore'],
    ['an unknown option', ['--verbose'], /^petstore: unknown option '--verbose'$/, 'petstore'],
    ['an unknown keys command', ['keys', 'delete', '1'], /^petstore: unknown command 'delete'$/, 'petstore keys'],
    ['a mistyped option', ['keys', 'list', '--jsn'], /^petstore: unknown option '--jsn'$/, 'petstore keys list'],
    ['no --plan', ['keys', 'create', '--name', 'x'], /^petstore: required option '--plan <plan>' not specified$/, 'petstore keys create'],
    ['an unknown plan', ['keys', 'create', '--plan', 'gold'], /^petstore: option '--plan <plan>' argument 'gold' is invalid\. Allowed choices are free, pro, business, enterprise\.$/, 'petstore keys create'],
    ['a limit of zero', ['keys', 'create', '--plan', 'pro', '--per-day', '0'], /^petstore: option '--per-day <n>' argument '0' is invalid\. must be a positive integer$/, 'petstore keys create'],
    ['an enterprise plan without --per-day', ['keys', 'create', '--plan', 'enterprise', '--per-minute', '10'], /^petstore: --per-day is required for an enterprise key \(with --per-day and --per-minute\)$/, 'petstore keys create'],
    ['an unknown scope', ['keys', 'create', '--plan', 'free', '--scopes', 'pets:read,pets:delete'], /^petstore: option '--scopes <scopes>' argument 'pets:read,pets:delete' is invalid\. unknown scope 'pets:delete'; the scopes are pets:read, pets:write$/, 'petstore keys create'],
    ['an expiry in the past', ['keys', 'create', '--plan', 'free', '--expires-at', '2020-01-01'], /^petstore: --expires-at must be in the future$/, 'petstore keys create'],
    ['an expiry on a day that does not exist', ['keys', 'create', '--plan', 'free', '--expires-at', '2099-02-30'], /^petstore: option '--expires-at <date>' argument '2099-02-30' is invalid\. must be an RFC 3339 time/, 'petstore keys create'],
    ['an expiry without its time zone', ['keys', 'create', '--plan', 'free', '--expires-at', '2099-01-01T00:00:00'], /^petstore: option '--expires-at <date>' argument '2099-01-01T00:00:00' is invalid\. must be an RFC 3339 time/, 'petstore keys create'],
    ['an expiry whose offset takes it past year 9999', ['keys', 'create', '--plan', 'free', '--expires-at', '9999-12-31T23:59:59-23:59'], /^petstore: option '--expires-at <date>' argument '9999-12-31T23:59:59-23:59' is invalid\. must lie between 0100-01-01T00:00:00Z and 9999-12-31T23:59:59\.999Z$/, 'petstore keys create'],
    ['an update to an expiry past year 9999', ['keys', 'update', '1', '--expires-at', '9999-12-31T23:59:59.999999999-23:59'], /^petstore: option '--expires-at <date>' argument '9999-12-31T23:59:59\.999999999-23:59' is invalid\. must lie between/, 'petstore keys update'],
    ['a duration without its unit', ['keys', 'create', '--plan', 'free', '--expires-in', '90'], /^petstore: option '--expires-in <duration>' argument '90' is invalid\. must be a positive number of minutes, hours or days: 30m, 12h, 90d$/, 'petstore keys create'],
    ['both an expiry and a duration', ['keys', 'create', '--plan', 'free', '--expires-at', '2099-01-01', '--expires-in', '1d'], /^petstore: option '--expires-at <date>' cannot be used with option '--expires-in <duration>'$/, 'petstore keys create'],
    ['no key id to show', ['keys', 'show'], /^petstore: missing required argument 'id'$/, 'petstore keys show'],
    ['no key id', ['keys', 'revoke'], /^petstore: missing required argument 'id'$/, 'petstore keys revoke'],
    ['a key id that is not a number', ['keys', 'revoke', 'abc'], /^petstore: command-argument value 'abc' is invalid for argument 'id'\. must be a positive integer$/, 'petstore keys revoke'],
    ['an extra argument', ['keys', 'list', 'all'], /^petstore: too many arguments for 'list'\. Expected 0 arguments but got 1\.$/, 'petstore keys list'],
    ['a roll without its overlap', ['keys', 'roll', '1'], /^petstore: required option '--expire-current-in <duration>' not specified$/, 'petstore keys roll'],
    ['a roll overlap past 7 days', ['keys', 'roll', '1', '--expire-current-in', '8d'], /^petstore: --expire-current-in must be at most 7 days/, 'petstore keys roll'],
    ['a roll overlap without its unit', ['keys', 'roll', '1', '--expire-current-in', '60'], /^petstore: option '--expire-current-in <duration>' argument '60' is invalid\. must be 0 or a number of minutes, hours or days/, 'petstore keys roll'],
    ['an update that changes nothing', ['keys', 'update', '1'], /^petstore: nothing to change: give --name, --plan, --per-minute, --per-day, --concurrency, --scopes or --expires-at$/, 'petstore keys update'],
    ['a cap of requests in flight of zero', ['keys', 'create', '--plan', 'free', '--concurrency', '0'], /^petstore: option '--concurrency <n>' argument '0' is invalid\. must be a positive integer$/, 'petstore keys create'],
    ['a cap of requests in flight past 10000', ['keys', 'create', '--plan', 'free', '--concurrency', '10001'], /^petstore: --concurrency must be an integer from 1 to 10000$/, 'petstore keys create'],
    ['an update to a cap of requests in flight past 10000', ['keys', 'update', '1', '--concurrency', '10001'], /^petstore: --concurrency must be an integer from 1 to 10000$/, 'petstore keys update'],
    ['an update to a cap of requests in flight that is no number', ['keys', 'update', '1', '--concurrency', 'many'], /^petstore: option '--concurrency <n>' argument 'many' is invalid\. must be a positive integer, or `plan`/, 'petstore keys update'],
    ['an update to an expiry in the past', ['keys', 'update', '1', '--expires-at', '2020-01-01'], /^petstore: --expires-at must be in the future$/, 'petstore keys update'],
    ['an update to a limit of zero', ['keys', 'update', '1', '--per-minute', '0'], /^petstore: option '--per-minute <n>' argument '0' is invalid\. must be a positive integer, or `plan`/, 'petstore keys update'],
    ['a token given to find as an argument', ['keys', 'find', 'pet_live_000000000000000000000000000000000000'], /^petstore: keys find takes the token on standard input, never as an argument/, 'petstore keys find']
  ]
  for (const [what, args, message, command] of cases) {
    it(`When the command line has ${what}, then it exits 2 with the error and a pointer to \`${command} --help\`, and touches no database`, async () => {
      // Arrange
      const dir = makeTempDir()
      try {
        // Act
        const result = await runHere(args, { DATABASE_URL: sqliteUrl(dir) })

        // Assert
        const output = `stdout: ${result.stdout}\nstderr: ${result.stderr}`
        const stderr = lines(result.stderr)
        assert.equal(result.code, 2, output)
        assert.equal(result.stdout, '', output)
        assert.match(stderr[0] ?? '', message, output)
        assert.equal(stderr.at(-1), `Try '${command} --help' for more information.`, output)
        assert.ok(stderr.length <= 3, output)
        assert.ok(!existsSync(databaseFile(dir)), 'the database was created')
      } finally {
        removeTempDir(dir)
      }
    })
  }
})

describe('petstore, as the process main.ts makes of it', { timeout: 60_000 }, () => {
  it('When `petstore --help` is run, then it prints the usage on stdout and exits 0', async () => {
    // Act
    const result = await runCli(['--help'], {})

    // Assert
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    assert.match(result.stdout, /^Usage: petstore /)
  })

  it('When `petstore --version` is run, then it prints the version alone and exits 0', async () => {
    // Act
    const result = await runCli(['--version'], {})

    // Assert
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, `${packageVersion()}\n`)
  })

  it('When the command line is bad, then it exits 2 with the error and a pointer to the help, on stderr alone', async () => {
    // Act
    const result = await runCli(['adopt'], {})

    // Assert
    assert.equal(result.code, 2, result.stderr)
    assert.equal(result.stdout, '')
    assert.deepEqual(lines(result.stderr), ["petstore: unknown command 'adopt'", "Try 'petstore --help' for more information."])
  })

  it('When `petstore` is run with no command, then it prints its usage on stderr and exits 2', async () => {
    // Act
    const result = await runCli([], {})

    // Assert
    assert.equal(result.code, 2, result.stderr)
    assert.equal(result.stdout, '')
    assert.match(result.stderr, /^Usage: petstore /)
  })
})

describe('petstore keys and serve, when DATABASE_URL is wrong or unreachable', { timeout: 90_000 }, () => {
  let postgresUrl = ''
  let hung: Server | undefined
  const held = new Set<Socket>()

  before(async () => { postgresUrl = await freshPostgresDatabase() })
  after(async () => {
    for (const socket of held) socket.destroy()
    await new Promise((resolve) => { if (hung === undefined) resolve(undefined); else hung.close(resolve) })
  })

  const commands = [['keys', 'list'], ['keys', 'create', '--plan', 'free'], ['keys', 'revoke', '1'], ['serve']]

  for (const command of commands) {
    it(`When PostgreSQL refuses connections, then \`petstore ${command.join(' ')}\` exits 1 with one line naming the URL without its password`, async () => {
      // Arrange: a port nothing listens on.
      const port = await freePort()
      const env = { DATABASE_URL: `postgres://petstore:s3cret-pw@127.0.0.1:${port}/petstore`, PORT: '0' }

      // Act: a refusal is at once; the time given is a loaded machine's, for starting the command.
      const result = await runCli(command, env, 30_000)

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.equal(line, `petstore: cannot open the database DATABASE_URL=postgres://petstore:***@127.0.0.1:${port}/petstore: connect ECONNREFUSED 127.0.0.1:${port}`)
    })
  }

  it('When PostgreSQL accepts the connection but never answers, then `keys list` gives up with one line within the connect timeout', async () => {
    // Arrange: a server that takes connections and says nothing, as a frozen host does.
    const server = hung = createServer((socket) => { held.add(socket) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    assert.ok(address !== null && typeof address === 'object')
    const env = { DATABASE_URL: `postgres://petstore:s3cret-pw@127.0.0.1:${address.port}/petstore` }
    const started = Date.now()

    // Act
    const result = await runCli(['keys', 'list'], env, DATABASE_GIVE_UP_MS)

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.match(line, new RegExp(`^petstore: cannot open the database DATABASE_URL=postgres://petstore:\\*\\*\\*@127\\.0\\.0\\.1:${address.port}/petstore: .*timeout`, 'i'))
    assert.ok(Date.now() - started < DATABASE_GIVE_UP_MS)
  })

  it('When the database named does not exist, then `keys list` exits 1 with one line saying so', async () => {
    // Arrange
    const url = new URL(postgresUrl)
    url.pathname = '/no_such_database'

    // Act
    const result = await runCli(['keys', 'list'], { DATABASE_URL: url.href })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.equal(line, `petstore: cannot open the database DATABASE_URL=${url.href}: database "no_such_database" does not exist`)
  })

  it('When the user is unknown to PostgreSQL, then `keys create` exits 1 with one line that does not show the password', async () => {
    // Arrange
    const url = new URL(postgresUrl)
    url.username = 'nobody'
    url.password = 'hunter2-pw'

    // Act
    const result = await runCli(['keys', 'create', '--plan', 'free'], { DATABASE_URL: url.href })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.match(line, /^petstore: cannot open the database DATABASE_URL=postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:\d+\/petstore_\w+: role "nobody" does not exist$/)
    assert.ok(!result.stderr.includes('hunter2'), result.stderr)
  })

  for (const command of [['keys', 'list'], ['serve']]) {
    it(`When DATABASE_URL is not a valid URL, then \`petstore ${command.join(' ')}\` exits 1 with one line saying so, password hidden`, async () => {
      // Arrange: an @ left unescaped in the password, and a port that is not a number.
      const env = { DATABASE_URL: 'postgres://petstore:p@ss@db.internal:port/petstore', PORT: '0' }

      // Act
      const result = await runCli(command, env)

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.equal(line, 'petstore: cannot open the database DATABASE_URL=postgres://petstore:***@db.internal:port/petstore: not a valid URL')
    })
  }

  it('When DATABASE_URL is neither sqlite: nor postgres:, then `keys list` exits 1 with one configuration line', async () => {
    // Act
    const result = await runCli(['keys', 'list'], { DATABASE_URL: 'mysql://petstore:pw@db/petstore' })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.match(line, /^petstore: configuration: DATABASE_URL must be /)
    assert.ok(!line.includes(':pw@'), line)
  })
})

describe('petstore keys, on a SQLite path', { timeout: 60_000 }, () => {
  let dir = ''

  before(() => { dir = makeTempDir() })
  after(() => { removeTempDir(dir) })

  for (const command of [['keys', 'list'], ['keys', 'create', '--plan', 'free'], ['keys', 'revoke', '1']]) {
    it(`When the path's folder does not exist, then \`petstore ${command.join(' ')}\` exits 1 naming the folder and creates nothing`, async () => {
      // Arrange
      const folder = join(dir, 'no', 'such', 'folder')

      // Act
      const result = await runHere(command, { DATABASE_URL: `sqlite:${join(folder, 'p.db')}` })

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.ok(line.startsWith(`petstore: DATABASE_URL=sqlite:${join(folder, 'p.db')}: the folder ${folder} does not exist`), line)
      assert.ok(!existsSync(join(dir, 'no')), 'a folder was created')
    })
  }

  it('When the path is relative and its folder does not exist, then the message names the folder it looked in', async () => {
    // Arrange: the command runs from the project root (a process of its own: the folder is its working directory's).
    const name = `no-such-folder-${process.pid}`
    const folder = join(PROJECT_ROOT, name)
    assert.ok(!existsSync(folder), `${folder} exists already`)
    try {
      // Act
      const result = await runCli(['keys', 'list'], { DATABASE_URL: `sqlite:${name}/p.db` })

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.ok(line.includes(`the folder ${folder} does not exist`), line)
      assert.ok(!existsSync(folder), 'a folder was created')
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it('When the path goes through a file, then `keys create` exits 1 saying it is not a folder', async () => {
    // Arrange
    const file = join(dir, 'a-file')
    writeFileSync(file, '')

    // Act
    const result = await runHere(['keys', 'create', '--plan', 'free'], { DATABASE_URL: `sqlite:${join(file, 'p.db')}` })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.ok(line.startsWith(`petstore: DATABASE_URL=sqlite:${join(file, 'p.db')}: ${file} is not a folder, so this cannot be the server's database`), line)
  })

  it('When DATABASE_URL is sqlite::memory:, then `keys create` exits 1 and says the key would be lost', async () => {
    // Act
    const result = await runHere(['keys', 'create', '--plan', 'free'], { DATABASE_URL: 'sqlite::memory:' })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.match(line, /^petstore: DATABASE_URL=sqlite::memory: lasts only as long as this command, so a key made there would be lost/)
  })

  it('When the folder exists but the file does not yet, then `keys create` makes the database there and `keys list` shows the key', async () => {
    // Arrange
    const folder = join(dir, 'before-first-start')
    mkdirSync(folder)
    const env = { DATABASE_URL: `sqlite:${join(folder, 'p.db')}` }

    // Act
    const created = await runCliOk(['keys', 'create', '--plan', 'pro', '--name', 'early'], env)
    const listed = await runCliOk(['keys', 'list', '--json'], env)

    // Assert
    assert.match(lines(created.stdout).at(-1) ?? '', TOKEN)
    assert.ok(existsSync(join(folder, 'p.db')))
    assert.deepEqual((JSON.parse(listed.stdout) as Array<{ name: string }>).map((k) => k.name), ['early'])
  })
})

describe('petstore keys list, for people and for scripts', { timeout: 60_000 }, () => {
  let dir: string | undefined

  after(() => { removeTempDir(dir) })

  it('When there are no keys, then the table is one line saying so and --json is []', async () => {
    // Arrange
    const empty = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(empty) }
    try {
      // Act
      const table = await runHereOk(['keys', 'list'], env)
      const json = await runHereOk(['keys', 'list', '--json'], env)

      // Assert
      assert.equal(table.stdout, `No API keys in DATABASE_URL=${sqliteUrl(empty)}; create one with \`petstore keys create --plan PLAN\`.\n`)
      assert.equal(json.stdout, '[]\n')
    } finally {
      removeTempDir(empty)
    }
  })

  it('When names are long, wide or hold control characters, then every column stays aligned and --json keeps the names exact', async () => {
    // Arrange
    dir = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const names = ['short', 'x'.repeat(70), '猫の店のかぎ', 'bell\u0007\nnext line\u001b[2J', '']
    for (const name of names) await createKey(env, ['--plan', 'business', '--name', name])

    // Act
    const table = await runHereOk(['keys', 'list'], env)
    const json = await runHereOk(['keys', 'list', '--json'], env)

    // Assert
    const rows = lines(table.stdout)
    assert.equal(rows.length, names.length + 1, table.stdout)
    const planColumns = rows.map((row, i) => displayWidth(row.slice(0, row.indexOf(i === 0 ? 'PLAN' : 'business'))))
    assert.equal(new Set(planColumns).size, 1, table.stdout)
    for (const row of rows) assert.doesNotMatch(row, /\p{Cc}/u)
    assert.ok(table.stdout.includes('bell\\u0007\\nnext line\\u001b[2J'), table.stdout)
    assert.ok(table.stdout.includes(`${'x'.repeat(39)}…`), table.stdout)
    assert.deepEqual((JSON.parse(json.stdout) as Array<{ name: string }>).map((k) => k.name), names)
  })

  it('When no key has the id, then `keys revoke` exits 1 with one line', async () => {
    // Arrange
    const empty = makeTempDir()

    // Act
    const result = await runHere(['keys', 'revoke', '999'], { DATABASE_URL: sqliteUrl(empty) }).finally(() => removeTempDir(empty))

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.equal(line, 'petstore: No API key has the id 999.')
  })
})

describe('petstore keys list, searched and filtered', { timeout: 120_000 }, () => {
  it('When `keys list` is given --search, --state, --plan and --sort, then it lists only the keys that match, in that order', async () => {
    // Arrange
    const filtered = makeTempDir()
    const env = { DATABASE_URL: sqliteUrl(filtered) }
    try {
      const acme = await createKey(env, ['--plan', 'pro', '--name', 'Acme mobile'])
      const web = await createKey(env, ['--plan', 'free', '--name', 'acme web'])
      const other = await createKey(env, ['--plan', 'free', '--name', 'Globex'])
      await runHereOk(['keys', 'revoke', String(web.id)], env)
      const ids = async (args: string[]): Promise<number[]> =>
        (JSON.parse((await runHereOk(['keys', 'list', ...args, '--json'], env)).stdout) as Array<{ id: number }>).map((key) => key.id)

      // Act
      const searched = await ids(['--search', 'ACME'])
      const revoked = await ids(['--state', 'revoked'])
      const freeActive = await ids(['--plan', 'free', '--state', 'active'])
      const byUse = await ids(['--sort', 'lastUsed'])
      const none = await runHereOk(['keys', 'list', '--search', 'nothing like it'], env)
      const badState = await runHere(['keys', 'list', '--state', 'gone'], env)

      // Assert
      assert.deepEqual(searched, [acme.id, web.id])
      assert.deepEqual(revoked, [web.id])
      assert.deepEqual(freeActive, [other.id])
      assert.deepEqual(byUse, [acme.id, web.id, other.id])
      assert.equal(none.stdout, 'No API key matches.\n')
      assert.equal(badState.code, 2, badState.stderr)
      assert.match(badState.stderr, /^petstore: option '--state <state>' argument 'gone' is invalid\. Allowed choices are active, expired, revoked\./)
    } finally {
      removeTempDir(filtered)
    }
  })
})

describe('petstore keys, scopes, expiry and the token hint', { timeout: 60_000 }, () => {
  let dir = ''
  before(() => { dir = makeTempDir() })
  after(() => { removeTempDir(dir) })

  const DAY_MS = 86_400_000

  it('When a key is created with --scopes and --expires-in, then --json has them and the hint, and list and show --json agree', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const before = Date.now()

    // Act
    const { stdout } = await runHereOk(['keys', 'create', '--plan', 'pro', '--name', 'reader', '--scopes', 'pets:read', '--expires-in', '90d', '--json'], env)
    const after = Date.now()
    const created = JSON.parse(stdout) as { id: number, token: string, scopes: string[], expiresAt: string, tokenHint: string }
    const listed = JSON.parse((await runHereOk(['keys', 'list', '--json'], env)).stdout) as Array<Record<string, unknown>>
    const shown = JSON.parse((await runHereOk(['keys', 'show', String(created.id), '--json'], env)).stdout) as Record<string, unknown>

    // Assert
    assert.deepEqual(created.scopes, ['pets:read'])
    assert.match(created.expiresAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    const expiresAt = Date.parse(created.expiresAt)
    assert.ok(expiresAt >= before + 90 * DAY_MS && expiresAt <= after + 90 * DAY_MS, created.expiresAt)
    assert.equal(created.tokenHint, `pet_live_…${created.token.slice(-4)}`)
    const entry = listed.find((key) => key['id'] === created.id)
    assert.deepEqual(entry, { ...shown })
    assert.deepEqual(
      [entry?.['scopes'], entry?.['expiresAt'], entry?.['lastUsedAt'], entry?.['tokenHint'], entry?.['revoked']],
      [['pets:read'], created.expiresAt, null, created.tokenHint, false])
    assert.ok(!JSON.stringify(listed).includes(created.token), 'a token is listed')
  })

  it('When a key is created with --expires-at as a date, then it expires at that day\'s first instant, UTC, and the token is still alone on the last line', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }

    // Act
    const created = await runHereOk(['keys', 'create', '--plan', 'free', '--scopes', 'pets:write,pets:read', '--expires-at', '2099-01-02'], env)
    const listed = JSON.parse((await runHereOk(['keys', 'list', '--json'], env)).stdout) as Array<{ scopes: string[], expiresAt: string | null, tokenHint: string }>
    const table = await runHereOk(['keys', 'list'], env)

    // Assert
    const token = lines(created.stdout).at(-1) ?? ''
    assert.match(token, TOKEN)
    const key = listed.at(-1)
    assert.deepEqual([key?.scopes, key?.expiresAt], [['pets:read', 'pets:write'], '2099-01-02T00:00:00.000Z'])
    assert.ok(table.stdout.includes(`pet_live_…${token.slice(-4)}`), table.stdout)
    assert.ok(table.stdout.includes('2099-01-02T00:00:00.000Z'), table.stdout)
  })

  it('When a key is created with --concurrency 2, then its line, show, list and their --json say 2; `--concurrency plan` gives it its plan\'s cap, which then follows its plan', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const created = await runHereOk(['keys', 'create', '--plan', 'pro', '--name', 'capped', '--concurrency', '2'], env)
    const id = Number(/ key (\d+) /.exec(created.stdout)?.[1])

    // Act
    const shown = (await runHereOk(['keys', 'show', String(id)], env)).stdout
    const shownJson = JSON.parse((await runHereOk(['keys', 'show', String(id), '--json'], env)).stdout) as { concurrency: number }
    const table = lines((await runHereOk(['keys', 'list', '--search', 'capped'], env)).stdout)
    const listed = (JSON.parse((await runHereOk(['keys', 'list', '--json'], env)).stdout) as Array<{ id: number, concurrency: number }>).find((key) => key.id === id)
    const update = async (...args: string[]): Promise<{ concurrency: number }> => JSON.parse((await runHereOk(['keys', 'update', String(id), ...args, '--json'], env)).stdout) as { concurrency: number }
    const raised = await update('--concurrency', '40')
    const otherPlan = await update('--plan', 'business')
    const back = await update('--concurrency', 'plan')
    const free = await update('--plan', 'free')

    // Assert
    assert.match(created.stdout, /^Created production key \d+ \(capped\): plan pro, 300 requests a minute, 10000 a day, 2 in flight at once; scopes /)
    assert.match(shown, /^concurrency: 2$/m)
    assert.equal(shownJson.concurrency, 2)
    assert.match(table[0] ?? '', /PER DAY +CONCURRENCY +SCOPES/)
    assert.match(table[1] ?? '', new RegExp(`^ *${id} +capped +pro +300 +10000 +2 +pets:read,pets:write `))
    assert.equal(listed?.concurrency, 2)
    assert.deepEqual([raised, otherPlan, back, free].map((key) => key.concurrency), [40, 40, 100, 5])
  })

  it('When a key is shown for people, then each field is on a line of its own, with its hint and never its token', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const key = await createKey(env, ['--plan', 'business', '--name', 'shown'])

    // Act
    const { stdout } = await runHereOk(['keys', 'show', String(key.id)], env)

    // Assert
    assert.match(stdout, /^id: \d+$/m)
    assert.match(stdout, /^name: shown$/m)
    assert.match(stdout, /^scopes: pets:read,pets:write$/m)
    assert.match(stdout, /^expires: never$/m)
    assert.ok(stdout.includes(`token: pet_live_…${key.token.slice(-4)}\n`), stdout)
    assert.ok(!stdout.includes(key.token), 'the token is shown')
  })

  it('When no key has the id, then `keys show` exits 1 with one line', async () => {
    // Act
    const result = await runHere(['keys', 'show', '999'], { DATABASE_URL: sqliteUrl(dir) })

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.equal(line, 'petstore: No API key has the id 999.')
  })
})

describe('petstore keys list, when its reader goes away', { timeout: 60_000 }, () => {
  let dir = ''

  before(async () => {
    // More output than a pipe holds (64 KiB), so that the command is still writing when the reader leaves.
    dir = makeTempDir()
    await insertKeys(dir, 2_000, (i) => `key ${i} ${'n'.repeat(60)}`)
  })
  after(() => { removeTempDir(dir) })

  it('When `petstore keys list | head -1` runs in a shell, then head prints the header and petstore ends with status 0 and nothing on stderr', async () => {
    // Arrange: a POSIX shell has no pipefail; the command's own status and stderr are kept in files.
    const status = join(dir, 'status')
    const stderr = join(dir, 'stderr')
    const script = '{ "$NODE" "$CLI" keys list 2>"$ERR"; echo $? >"$STATUS"; } | head -1'
    const child = spawn('sh', ['-c', script], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', NODE: process.execPath, CLI, ERR: stderr, STATUS: status, DATABASE_URL: sqliteUrl(dir) }
    })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })

    // Act
    const exit = await withTimeout(new Promise<number | null>((resolve) => child.once('close', resolve)), 15_000, 'the pipeline')
      .finally(() => child.kill('SIGKILL'))

    // Assert
    assert.equal(exit, 0)
    assert.match(stdout, /^ +ID {2}NAME +PLAN/)
    assert.equal(lines(stdout).length, 1)
    assert.equal(readFileSync(stderr, 'utf8'), '')
    assert.equal(readFileSync(status, 'utf8').trim(), '0')
  })

  for (const args of [['keys', 'list'], ['keys', 'list', '--json'], ['--help']]) {
    it(`When stdout is closed before \`petstore ${args.join(' ')}\` writes, then it exits 0 with nothing on stderr`, async () => {
      // Arrange
      const child = spawnCli(args, { DATABASE_URL: sqliteUrl(dir) })
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
      const closed = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (code, signal) => resolve([code, signal])))

      // Act: the child is still starting up; its first write meets a closed pipe.
      child.stdout.destroy()
      const [code, signal] = await withTimeout(closed, 15_000, `petstore ${args.join(' ')}`).finally(() => child.kill('SIGKILL'))

      // Assert
      assert.equal(stderr, '')
      assert.deepEqual({ code, signal }, { code: 0, signal: null })
    })
  }
})

describe('petstore keys update, roll and find', { timeout: 90_000 }, () => {
  let dir = ''
  let server: ServerProcess | undefined
  before(() => { dir = makeTempDir() })
  after(async () => {
    await server?.dispose()
    removeTempDir(dir)
  })

  const env = (): Record<string, string> => ({ DATABASE_URL: sqliteUrl(dir) })
  /** `keys find`, the token on its standard input, as a file or a pipe gives it. */
  const find = async (token: string, ...options: string[]): Promise<CliResult> => await runHere(['keys', 'find', ...options], env(), `${token}\n`)
  /** The status of GET /v1/pets with this token, from the running server. */
  const statusWith = async (token: string): Promise<number> => {
    const response = await fetch(`${server?.origin ?? ''}/v1/pets`, { headers: bearer(token), signal: AbortSignal.timeout(5_000) })
    await response.arrayBuffer()
    return response.status
  }
  /** Waits until the server answers `status` to this token: every instance learns a change within a second. */
  const untilStatus = async (token: string, status: number, what: string): Promise<void> => {
    await pollUntil(async () => (await statusWith(token)) === status ? true : undefined, { ms: 10_000, every: 100, what })
  }

  it('When a key is rolled with an overlap, then the new token is alone on the last line, and both tokens work on a running server and find the key', async () => {
    // Arrange
    const key = await createKey(env(), ['--plan', 'pro', '--name', 'rolled'])
    server = await startServer(env())
    assert.equal(await statusWith(key.token), 200)

    // Act
    const rolled = await runHereOk(['keys', 'roll', String(key.id), '--expire-current-in', '1h'], env())

    // Assert
    const output = lines(rolled.stdout)
    const token = output.at(-1) ?? ''
    assert.match(token, TOKEN)
    assert.notEqual(token, key.token)
    assert.match(output[0] ?? '', /^Rolled key \d+ \(rolled\): the token before this one works until \d{4}-\d{2}-\d{2}T[\d:.]+Z\.$/)
    await untilStatus(token, 200, 'the new token to be accepted')
    assert.equal(await statusWith(key.token), 200, 'the token before it, during the overlap')
    for (const [held, matched] of [[token, 'current'], [key.token, 'previous']]) {
      const found = JSON.parse((await runHereOk(['keys', 'find', '--json'], env(), `${held}\n`)).stdout) as { id: number, tokenHint: string, previousTokenExpiresAt: string | null, matchedToken: string }
      assert.deepEqual([found.id, found.tokenHint, found.matchedToken], [key.id, `pet_live_…${token.slice(-4)}`, matched])
      assert.ok(found.previousTokenExpiresAt !== null)
    }
    const shown = await runHereOk(['keys', 'show', String(key.id)], env())
    assert.match(shown.stdout, /^previous token until: \d{4}-/m)
  })

  it('When a key is rolled with --expire-current-in 0 --json, then it prints one object with the token, the token before no longer works, and find still names its key', async () => {
    // Arrange
    const key = await createKey(env(), ['--plan', 'free'])
    if (server === undefined) server = await startServer(env())
    await untilStatus(key.token, 200, 'the new key to be accepted')

    // Act
    const rolled = await runHereOk(['keys', 'roll', String(key.id), '--expire-current-in', '0', '--json'], env())

    // Assert
    const object = JSON.parse(rolled.stdout) as { id: number, token: string, previousTokenExpiresAt: string | null }
    assert.deepEqual([object.id, object.previousTokenExpiresAt], [key.id, null])
    assert.match(object.token, TOKEN)
    await untilStatus(key.token, 401, 'the token before to be refused')
    await untilStatus(object.token, 200, 'the new token to be accepted')
    const former = JSON.parse((await find(key.token, '--json')).stdout) as { id: number, matchedToken: string }
    assert.deepEqual([former.id, former.matchedToken], [key.id, 'former'], 'a rolled-away token is traced to its key')
    assert.equal(JSON.parse((await runHereOk(['keys', 'find', '--json'], env(), object.token)).stdout).id, key.id, 'without a line ending too')
  })

  it('When a key is updated, then `keys show --json` shows the change, and the limits go back to the plan\'s with `plan`', async () => {
    // Arrange
    const key = await createKey(env(), ['--plan', 'pro', '--name', 'before'])
    const show = async (): Promise<Record<string, unknown>> => JSON.parse((await runHereOk(['keys', 'show', String(key.id), '--json'], env())).stdout) as Record<string, unknown>

    // Act
    const updated = await runHereOk(['keys', 'update', String(key.id), '--name', 'after', '--plan', 'enterprise', '--per-minute', '7', '--per-day', '70',
      '--scopes', 'pets:read', '--expires-at', '2099-01-02'], env())
    const changed = await show()
    await runHereOk(['keys', 'update', String(key.id), '--plan', 'business', '--per-minute', 'plan', '--per-day', 'plan', '--expires-at', 'never'], env())
    const back = await show()

    // Assert
    assert.match(updated.stdout, /^Updated key \d+\.\nid: \d+\nname: after\n/)
    assert.deepEqual(
      [changed['name'], changed['plan'], changed['perMinute'], changed['perDay'], changed['scopes'], changed['expiresAt']],
      ['after', 'enterprise', 7, 70, ['pets:read'], '2099-01-02T00:00:00.000Z'])
    assert.deepEqual([back['plan'], back['perMinute'], back['perDay'], back['expiresAt'], back['scopes']], ['business', 1000, 100_000, null, ['pets:read']])
  })

  it('When an update breaks a rule of keys, then it exits 1 with one line naming the option, and the key is unchanged', async () => {
    // Arrange
    const key = await createKey(env(), ['--plan', 'pro'])

    // Act
    const result = await runHere(['keys', 'update', String(key.id), '--plan', 'enterprise'], env())

    // Assert
    const line = assertOneLineFailure(result, 1)
    assert.equal(line, 'petstore: --per-minute is required for an enterprise key (with --per-day and --per-minute)')
    assert.equal(JSON.parse((await runHereOk(['keys', 'show', String(key.id), '--json'], env())).stdout).plan, 'pro')
  })

  for (const command of [['update', '--name', 'x'], ['roll', '--expire-current-in', '1h']]) {
    it(`When a revoked key is given to \`keys ${command[0] ?? ''}\`, then it exits 1 with one line saying it is revoked`, async () => {
      // Arrange
      const key = await createKey(env(), ['--plan', 'pro'])
      await runHereOk(['keys', 'revoke', String(key.id)], env())

      // Act
      const [name, ...options] = command as [string, ...string[]]
      const result = await runHere(['keys', name, String(key.id), ...options], env())

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.equal(line, `petstore: The API key ${key.id} is revoked: it can be read, never changed or rolled.`)
    })
  }

  it('When no key has the id, then `keys update` and `keys roll` exit 1 with one line', async () => {
    for (const args of [['update', '999', '--name', 'x'], ['roll', '999', '--expire-current-in', '0']]) {
      const line = assertOneLineFailure(await runHere(['keys', ...args], env()), 1)
      assert.equal(line, 'petstore: No API key has the id 999.')
    }
  })

  it('When `keys find` reads a token of a revoked key, then it prints that key, a field a line, as `keys show` does, and which token matched', async () => {
    // Arrange
    const key = await createKey(env(), ['--plan', 'business', '--name', 'leaked'])
    await runHereOk(['keys', 'revoke', String(key.id)], env())

    // Act
    const found = await runHereOk(['keys', 'find'], env(), `${key.token}\n`)
    const shown = await runHereOk(['keys', 'show', String(key.id)], env())

    // Assert
    assert.equal(found.stdout, `${shown.stdout}matched token: current\n`)
    assert.match(found.stdout, /^name: leaked$/m)
    assert.match(found.stdout, /^revoked: \d{4}-/m)
    assert.ok(!found.stdout.includes(key.token), 'the token is shown')
  })

  const refused: Array<[string, string, RegExp]> = [
    ['nothing', '', /^petstore: no token on standard input; give it there, never on the command line/],
    ['an empty line', '\n', /^petstore: no token on standard input/],
    ['something that is not a token', 'hello\n', /^petstore: standard input does not hold a petstore token/],
    ['a token and a second line', `${'x'}\n`.repeat(2), /^petstore: standard input does not hold a petstore token/],
    ['more than a token', 'x'.repeat(5000), /^petstore: standard input holds more than one token/]
  ]
  for (const [what, input, message] of refused) {
    it(`When \`keys find\` reads ${what} on standard input, then it exits 1 with one line saying so, and shows no input`, async () => {
      // Act
      const result = await runHere(['keys', 'find'], env(), input)

      // Assert
      const line = assertOneLineFailure(result, 1)
      assert.match(line, message)
      if (input.trim() !== '') assert.ok(!line.includes(input.trim().slice(0, 5)), line)
    })
  }
})

describe('petstore keys usage', { timeout: 60_000 }, () => {
  let dir = ''
  before(() => { dir = makeTempDir() })
  after(() => { removeTempDir(dir) })

  it('When `keys usage` is run, then it prints one row a day, zeros included, oldest first: 30 days by default, or the range asked for', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const key = await createKey(env, ['--plan', 'free'])
    const today = new Date().toISOString().slice(0, 10)

    // Act
    const byDefault = JSON.parse((await runHereOk(['keys', 'usage', String(key.id), '--json'], env)).stdout) as Array<{ date: string, admitted: number, refused: number }>
    const table = (await runHereOk(['keys', 'usage', String(key.id), '--from', '2026-02-27', '--to', '2026-03-01'], env)).stdout

    // Assert
    assert.equal(byDefault.length, 30)
    assert.ok([today, new Date().toISOString().slice(0, 10)].includes(byDefault.at(-1)?.date ?? ''), 'it ends today, or tomorrow if midnight passed meanwhile')
    assert.ok(byDefault.every(({ admitted, refused }) => admitted === 0 && refused === 0))
    assert.deepEqual(lines(table), [
      'DATE        ADMITTED  REFUSED',
      '2026-02-27         0        0',
      '2026-02-28         0        0',
      '2026-03-01         0        0'
    ])
  })

  it('When `keys usage` is given a range backwards, a date that does not exist, or an unknown id, then it exits 1 with one line', async () => {
    // Arrange
    const env = { DATABASE_URL: sqliteUrl(dir) }
    const key = await createKey(env, ['--plan', 'free'])

    // Act
    const backwards = assertOneLineFailure(await runHere(['keys', 'usage', String(key.id), '--from', '2026-03-02', '--to', '2026-03-01'], env), 1)
    const missing = assertOneLineFailure(await runHere(['keys', 'usage', String(key.id), '--from', '2026-02-30'], env), 1)
    const unknown = assertOneLineFailure(await runHere(['keys', 'usage', '999'], env), 1)

    // Assert
    assert.equal(backwards, 'petstore: --from must not be after the last day')
    assert.equal(missing, 'petstore: --from must be a date that exists, as YYYY-MM-DD')
    assert.equal(unknown, 'petstore: No API key has the id 999.')
  })
})
