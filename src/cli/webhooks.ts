// `petstore webhooks create|list|show|update|delete|deliveries`: webhook
// endpoints for operators, in the database the server reads (DATABASE_URL;
// docs/WEBHOOKS.md). Each command calls webhooks/manage.ts, as the admin API
// does, so both doors refuse the same things in the same words.
import { type Command, InvalidArgumentError, Option } from 'commander'
import type { Config } from '../config.js'
import type { Storage } from '../db/storage.js'
import { EVENT_TYPES, MAX_OVERLAP_SECONDS, type EventType } from '../domain.js'
import {
  WebhookRuleError, createWebhook, deleteWebhook, listDeliveries, listWebhooks, resendDelivery, rollWebhookSecret, sendTestEvent, showWebhook, updateWebhook,
  type DeliveryView, type WebhookUpdate, type WebhookView
} from '../webhooks/manage.js'
import { databaseLabel, withCommandStorage } from './database.js'
import { CommandFailure, EXIT_USAGE } from './errors.js'
import type { CommandIo } from './io.js'
import { overlap, positiveInteger } from './keys/parse.js'
import { writeJson, writeLine } from './keys/render.js'
import { formatTable, printable, type Column } from './table.js'

/** The admin API's limits on what operators type (src/schemas/webhook.ts). */
const MAX_URL_LENGTH = 2000
const MAX_DESCRIPTION_LENGTH = 500
/** The admin API's largest page, read to the end. */
const PAGE = 100
const DESCRIPTION_COLUMNS = 40

/** The option each field of webhooks/manage.ts's refusals names. */
const OPTION_OF_FIELD: Readonly<Record<string, string>> = { url: '--url', events: '--events', description: '--description', enabled: '--enabled' }

function ruleBroken (error: WebhookRuleError): string {
  return `${OPTION_OF_FIELD[error.field] ?? error.field} ${error.reason}`
}

async function withStorage<T> (work: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  return await withCommandStorage(work, (failure) => failure instanceof WebhookRuleError ? new CommandFailure(ruleBroken(failure), { cause: failure }) : failure)
}

/** `pet.created,key.revoked`: each a known type, each once. */
function eventList (value: string): EventType[] {
  const named = value.split(',').map((type) => type.trim())
  const unknown = named.find((type) => !(EVENT_TYPES as readonly string[]).includes(type))
  if (unknown !== undefined) throw new InvalidArgumentError(`unknown event type '${unknown}'; the types are ${EVENT_TYPES.join(', ')}`)
  if (new Set(named).size !== named.length) throw new InvalidArgumentError('names a type twice')
  return named as EventType[]
}

/** As eventList, or `all`: every type, those added later too (commander turns a parser's null into '', so `all` is kept as it is). */
function eventListOrAll (value: string): EventType[] | 'all' {
  return value === 'all' ? 'all' : eventList(value)
}

function url (value: string): string {
  if (value.length === 0 || value.length > MAX_URL_LENGTH) throw new InvalidArgumentError(`must be 1 to ${MAX_URL_LENGTH} characters`)
  return value
}

function description (value: string): string {
  if ([...value].length > MAX_DESCRIPTION_LENGTH) throw new InvalidArgumentError(`must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
  return value
}

function trueOrFalse (value: string): boolean {
  if (value !== 'true' && value !== 'false') throw new InvalidArgumentError('must be true or false')
  return value === 'true'
}

const WEBHOOK_COLUMNS: readonly Column[] = [
  { title: 'ID', align: 'right' },
  { title: 'URL' },
  { title: 'EVENTS' },
  { title: 'ENABLED' },
  { title: 'DESCRIPTION', maxWidth: DESCRIPTION_COLUMNS },
  { title: 'CREATED' }
]

function webhookRow (webhook: WebhookView): string[] {
  return [String(webhook.id), webhook.url, webhook.events?.join(',') ?? 'all', webhook.enabled ? 'yes' : 'no', webhook.description, webhook.createdAt]
}

function writeWebhook (out: CommandIo['out'], webhook: WebhookView, json: boolean | undefined): void {
  if (json === true) {
    writeJson(out, webhook)
    return
  }
  const row = webhookRow(webhook)
  const fields: Array<[string, string]> = WEBHOOK_COLUMNS.map((column, i) => [column.title.toLowerCase(), row[i] ?? ''])
  fields.push(['updated', webhook.updatedAt])
  if (webhook.previousSecretExpiresAt !== null) fields.push(['previous secret until', webhook.previousSecretExpiresAt])
  if (webhook.disabledAt !== null) fields.push(['disabled by the service', `${webhook.disabledAt}: ${webhook.disabledReason ?? ''}`])
  out(fields.map(([name, value]) => `${name}: ${printable(value)}\n`).join(''))
}

const DELIVERY_COLUMNS: readonly Column[] = [
  { title: 'WEBHOOK-ID' },
  { title: 'TYPE' },
  { title: 'EVENT CREATED' },
  { title: 'STATE' },
  { title: 'ATTEMPTS', align: 'right' },
  { title: 'STATUS', align: 'right' },
  { title: 'NEXT ATTEMPT' },
  { title: 'LAST ERROR', maxWidth: 60 }
]

function deliveryRow (delivery: DeliveryView): string[] {
  return [
    delivery.webhookId, delivery.type, delivery.eventCreatedAt, delivery.state, String(delivery.attempts),
    delivery.lastStatus === null ? '-' : String(delivery.lastStatus), delivery.nextAttemptAt ?? '-', delivery.lastError ?? ''
  ]
}

const ID_HELP = 'the endpoint\'s id, as `petstore webhooks list` shows it'

export function addWebhooksCommands (program: Command, io: CommandIo): void {
  const webhooks = program.command('webhooks').description('manage webhook endpoints, where events are delivered (in the database of DATABASE_URL)')

  webhooks.command('create')
    .description('make a webhook endpoint and print its signing secret, alone on the last line (shown only this once)')
    .requiredOption('--url <url>', 'where deliveries are POSTed: an https:// URL of a public address (http:// and private ones only with WEBHOOK_ALLOW_PRIVATE=true)', url)
    .option('--events <types>', `the event types to deliver, comma-separated: ${EVENT_TYPES.join(', ')} (default: every type, those added later too)`, eventList)
    .option('--description <text>', 'a note for people, e.g. who receives these events', description)
    .option('--json', 'print one JSON object: the endpoint, as `webhooks show --json` has it, and its `secret`')
    .action(async (options: { url: string, events?: EventType[], description?: string, json?: boolean }) => {
      const webhook = await withStorage(async (storage, config) => await createWebhook(storage,
        { url: options.url, events: options.events, description: options.description, now: Date.now() },
        { allowPrivate: config.webhookAllowPrivate }))
      if (options.json === true) {
        writeJson(io.out, webhook)
        return
      }
      writeLine(io.out, `Created webhook endpoint ${webhook.id} for ${printable(webhook.url)}: events ${webhook.events?.join(', ') ?? 'all'}.`)
      writeLine(io.out, 'The signing secret below is shown only this once; store it now and give it to the receiver.')
      writeLine(io.out, webhook.secret)
    })

  webhooks.command('list')
    .description('list webhook endpoints, oldest first (never their secrets)')
    .option('--json', 'print a JSON array of endpoints (id, url, events, description, enabled, createdAt, updatedAt)')
    .action(async (options: { json?: boolean }) => {
      const { all, databaseUrl } = await withStorage(async (storage, config) => {
        const all: WebhookView[] = []
        let page: WebhookView[]
        do {
          page = await listWebhooks(storage, all.at(-1)?.id ?? 0, PAGE)
          all.push(...page)
        } while (page.length === PAGE)
        return { all, databaseUrl: config.databaseUrl }
      })
      if (options.json === true) writeJson(io.out, all)
      else if (all.length === 0) writeLine(io.out, `No webhook endpoints in ${databaseLabel(databaseUrl)}; make one with \`petstore webhooks create --url URL\`.`)
      else io.out(formatTable(WEBHOOK_COLUMNS, all.map(webhookRow)))
    })

  webhooks.command('show')
    .description('show one webhook endpoint (never its secret)')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--json', 'print one JSON object, as one element of `webhooks list --json`')
    .action(async (id: number, options: { json?: boolean }) => {
      writeWebhook(io.out, await withStorage(async (storage) => await showWebhook(storage, id)), options.json)
    })

  webhooks.command('update')
    .description('change an endpoint\'s URL, event types, description, or whether it is enabled')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--url <url>', 'where deliveries are POSTed', url)
    .option('--events <types>', `the event types to deliver, comma-separated (${EVENT_TYPES.join(', ')}), or \`all\`: every type`, eventListOrAll)
    .option('--description <text>', 'a note for people', description)
    .addOption(new Option('--enabled <boolean>', 'false: no new events are given to the endpoint and its pending deliveries wait; true: they go on').argParser(trueOrFalse))
    .option('--json', 'print the endpoint as one JSON object, as `webhooks show --json` does')
    .action(async (id: number, options: Omit<WebhookUpdate, 'events'> & { events?: EventType[] | 'all', json?: boolean }, command: Command) => {
      const { json, events, ...rest } = options
      const update: WebhookUpdate = events === undefined ? rest : { ...rest, events: events === 'all' ? null : events }
      if (Object.keys(update).length === 0) {
        command.error('nothing to change: give --url, --events, --description or --enabled', { exitCode: EXIT_USAGE, code: 'petstore.nothingToChange' })
      }
      const webhook = await withStorage(async (storage, config) => await updateWebhook(storage, id, update, Date.now(), { allowPrivate: config.webhookAllowPrivate }))
      if (json !== true) writeLine(io.out, `Updated webhook endpoint ${id}.`)
      writeWebhook(io.out, webhook, json)
    })

  webhooks.command('delete')
    .description('remove a webhook endpoint and its deliveries, pending ones too')
    .argument('<id>', ID_HELP, positiveInteger)
    .action(async (id: number) => {
      await withStorage(async (storage) => await deleteWebhook(storage, id))
      writeLine(io.out, `Deleted webhook endpoint ${id}.`)
    })

  webhooks.command('roll-secret')
    .description('give an endpoint a new signing secret, printed alone on the last line (shown only this once); the current one signs too for the overlap given')
    .argument('<id>', ID_HELP, positiveInteger)
    .requiredOption('--expire-current-in <duration>', 'how long the current secret keeps signing beside the new one: 0 (it stops at once), or minutes, hours or days up to 7 days (30m, 12h, 7d)',
      (value: string) => {
        const seconds = overlap(value)
        if (seconds > MAX_OVERLAP_SECONDS) throw new InvalidArgumentError('must be at most 7 days')
        return seconds
      })
    .option('--json', 'print one JSON object: the endpoint, as `webhooks show --json` has it, and its new `secret`')
    .action(async (id: number, options: { expireCurrentIn: number, json?: boolean }) => {
      const webhook = await withStorage(async (storage) => await rollWebhookSecret(storage, id, options.expireCurrentIn, Date.now()))
      if (options.json === true) {
        writeJson(io.out, webhook)
        return
      }
      writeLine(io.out, `Rolled the signing secret of webhook endpoint ${id}: ${webhook.previousSecretExpiresAt === null ? 'the secret before it no longer signs' : `the secret before it signs too until ${webhook.previousSecretExpiresAt}`}.`)
      writeLine(io.out, 'The signing secret below is shown only this once; store it now and give it to the receiver.')
      writeLine(io.out, webhook.secret)
    })

  webhooks.command('resend')
    .description('send a succeeded or failed delivery again, as a new attempt of the same webhook-id')
    .argument('<id>', ID_HELP, positiveInteger)
    .argument('<webhook-id>', 'the event\'s webhook-id, evt_…, as `petstore webhooks deliveries` lists it', (value: string) => {
      if (!/^evt_[0-9]{1,19}$/.test(value)) throw new InvalidArgumentError('must be evt_ and a number, as `petstore webhooks deliveries` lists it')
      return value
    })
    .action(async (id: number, eventWebhookId: string) => {
      await withStorage(async (storage) => await resendDelivery(storage, id, eventWebhookId, Date.now()))
      writeLine(io.out, `Resending ${eventWebhookId} to webhook endpoint ${id}: the running service sends it within a second.`)
    })

  webhooks.command('test')
    .description('send a webhook.test event to this endpoint alone, delivered by the running service as any event')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--json', 'print its delivery as one JSON object, as `webhooks deliveries --json` has it')
    .action(async (id: number, options: { json?: boolean }) => {
      const delivery = await withStorage(async (storage) => await sendTestEvent(storage, id, Date.now()))
      if (options.json === true) writeJson(io.out, delivery)
      else writeLine(io.out, `Sending test event ${delivery.webhookId} to webhook endpoint ${id}; \`petstore webhooks deliveries ${id}\` shows how it went.`)
    })

  webhooks.command('deliveries')
    .description('list an endpoint\'s deliveries, newest event first (delivered and failed ones are kept for 7 days)')
    .argument('<id>', ID_HELP, positiveInteger)
    .option('--limit <n>', `at most this many, 1 to ${PAGE}`, (value) => {
      const n = positiveInteger(value)
      if (n > PAGE) throw new InvalidArgumentError(`must be at most ${PAGE}`)
      return n
    }, 20)
    .option('--json', 'print a JSON array of deliveries, as the admin API answers (webhookId, type, state, attempts, lastStatus, lastError, nextAttemptAt, …)')
    .action(async (id: number, options: { limit: number, json?: boolean }) => {
      const deliveries = await withStorage(async (storage) => await listDeliveries(storage, id, null, options.limit))
      if (options.json === true) writeJson(io.out, deliveries)
      else if (deliveries.length === 0) writeLine(io.out, `No deliveries to webhook endpoint ${id}.`)
      else io.out(formatTable(DELIVERY_COLUMNS, deliveries.map(deliveryRow)))
    })
}
