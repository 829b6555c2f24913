// The `petstore` command line: its commands, help and usage errors. Parsing
// never exits the process itself (exitOverride): runProgram gives the status,
// main.ts exits with it.
import { Command, CommanderError } from 'commander'
import { ConfigError, loadConfig } from '../config.js'
import { asDatabaseFailure } from './database.js'
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, oneLine } from './errors.js'
import { PROCESS_IO, type CommandIo } from './io.js'
import { addKeysCommands } from './keys/commands.js'
import { addStoreCommands } from './store.js'
import { addWebhooksCommands } from './webhooks.js'

const SERVE_ENVIRONMENT = `
Environment (default in brackets; more in README.md, "Configuration"):
  HOST                       address to listen on [127.0.0.1]
  PORT                       port to listen on; 0: any free port, printed at start [8080]
  DATABASE_URL               sqlite:PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DATABASE
                             [sqlite:./data/petstore.db]
  DATABASE_POOL_SIZE         PostgreSQL connections this instance may hold [10]
  REDIS_URL                  redis://… or redis+cluster://…: rate limits and bans shared by every
                             instance [unset: in-process]
  WORKERS                    worker threads serving PORT, or auto (one per core); above 1 needs
                             Node.js 22.12 or later [1]
  PETSTORE_ENV               production or staging: which keys are accepted [production]
  PUBLIC_BASE_URL            production address, ending in /v1 [http://HOST:PORT/v1]
  STAGING_BASE_URL           staging address, ending in /v1 [unset]
  TRUST_PROXY                true, a number of hops, or a comma list of proxy addresses/CIDRs whose
                             X-Forwarded-For is believed [unset]
  CORS_ORIGINS               comma list of origins allowed to call the API from a browser [unset: no CORS]
  RATE_LIMIT_BAN_THRESHOLD   refused requests inside one UTC minute that get a key banned [30]
  RATE_LIMIT_BAN_SECONDS     length of a ban, in seconds [900]
  LOG_LEVEL                  fatal, error, warn, info, debug, trace or silent [info]
  LOG_FORMAT                 json (one object per line) or pretty [json]
  ADMIN_PORT                 port on ADMIN_HOST for Prometheus metrics at /metrics and the admin API;
                             never PORT; 0: any free port [unset: off]
  ADMIN_HOST                 address of the ADMIN_PORT listener, whatever HOST is [127.0.0.1]
  ADMIN_TOKEN                bearer token of the admin API and console on the ADMIN_PORT listener;
                             32+ characters of random hex or base64 [unset: no admin API]
  USAGE_FLUSH_MS             how often usage counts are written to the database, 100 to 10000 [10000]
  DEPRECATION_BROWNOUTS      comma list of UTC intervals START/END (2030-06-01T14:00:00Z/2030-06-01T15:00:00Z)
                             in which the deprecated operation answers 410 as after its sunset [unset]
  WEBHOOK_ALLOW_PRIVATE      true: webhooks may go to http:// and private addresses, for development
                             and tests [false]
  SHED                       off, log or on: answer API requests 503 overloaded while the service is
                             overloaded; log writes what it would shed and serves it [on]
  SHED_EVENT_LOOP_DELAY_MS   the event loop's mean delay over half a second that means overloaded [200]
  SHED_DB_POOL_WAIT_MS       how long a wait for a PostgreSQL connection means overloaded, 10 to 5000 [500]
  SECRET_SCANNING_KEYS_URL   where the keys that sign secret-scanning reports are read: https://…, file:…,
                             or http:// to a loopback address [GitHub's list]
  OTEL_EXPORTER_OTLP_ENDPOINT traces over OTLP/HTTP to this collector, e.g. http://collector:4318
                             [unset: off]
  OTEL_SDK_DISABLED          true: no tracing, whatever the endpoint [false]
  OTEL_TRACES_SAMPLER        which traces are kept: parentbased_traceidratio, always_on, …
                             [parentbased_always_on]
  OTEL_TRACES_SAMPLER_ARG    share of traces the …traceidratio samplers keep, 0 to 1 [1]
  OTEL_BSP_SCHEDULE_DELAY    milliseconds between two exports of spans [5000]
  OTEL_BSP_MAX_QUEUE_SIZE    spans held for export; more are dropped [2048]
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans in one export [512]
  OTEL_BSP_EXPORT_TIMEOUT    milliseconds an export may take [30000]`

const EXIT_STATUS = `
Exit status: 0 on success, 1 when the command could not do its work (configuration, database, no such key), 2 on bad usage.`

function commandPath (command: Command): string {
  const names: string[] = []
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

function everyCommand (command: Command): Command[] {
  return [command, ...command.commands.flatMap(everyCommand)]
}

/**
 * `onServe`: called just before the service starts, once the command line
 * has been accepted. `io`: where the commands and commander's own help and
 * usage errors write, and where `keys find` reads (the process's standard
 * streams unless given: the CLI's tests give their own).
 */
export function buildProgram (version: string, { onServe, io = PROCESS_IO }: { onServe: () => void, io?: CommandIo }): Command {
  // Set before any subcommand is added: each copies them from its parent when created.
  const program = new Command('petstore')
    .description('The animal adoption store service, the administration of its API keys, and copies of its store.')
    .version(version, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      // One prefix for every line the command writes on stderr; commander's own is "error: ".
      outputError: (text, write) => { write(`petstore: ${text.replace(/^error: /, '')}`) }
    })
    .addHelpText('afterAll', EXIT_STATUS)

  program.command('serve')
    .description('run the HTTP service (what `npm start` runs), configured by environment variables')
    .addHelpText('after', SERVE_ENVIRONMENT)
    .action(async () => {
      const config = loadConfig()
      onServe()
      try {
        // Loaded here, not above: the key and store commands need none of the
        // server, and an operator's script runs them often (docs/KEYS.md).
        const { serve } = await import('../server.js')
        await serve(config)
      } catch (error) {
        throw await asDatabaseFailure(config.databaseUrl, error, 'open')
      }
    })

  addKeysCommands(program, io)
  addWebhooksCommands(program, io)
  addStoreCommands(program, io)

  // After a usage error, one line pointing to the help rather than the whole of it.
  for (const command of everyCommand(program)) {
    command.showHelpAfterError(`Try '${commandPath(command)} --help' for more information.`)
  }
  return program
}

/** How a command line ended: its exit status, and for a failure other than bad usage, the error. */
export type ProgramEnd = { status: number, error?: undefined } | { status: typeof EXIT_FAILURE, error: unknown }

/**
 * Parses `args` (the words after `petstore`) and runs the command. Help
 * and version end with 0 and bad usage with 2, commander having written
 * them already; any other error is given back for the caller to report.
 */
export async function runProgram (program: Command, args: readonly string[]): Promise<ProgramEnd> {
  try {
    await program.parseAsync(args, { from: 'user' })
    return { status: EXIT_OK }
  } catch (error) {
    if (error instanceof CommanderError) return { status: error.exitCode === EXIT_OK ? EXIT_OK : EXIT_USAGE }
    return { status: EXIT_FAILURE, error }
  }
}

/** The one line a failure other than bad usage ends with on stderr: what went wrong, never a stack trace. */
export function failureLine (error: unknown): string {
  const message = error instanceof ConfigError ? `configuration: ${error.message}` : error instanceof Error ? error.message : String(error)
  return `petstore: ${oneLine(message)}\n`
}
