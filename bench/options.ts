// The command line of `npm run bench`.
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'

export interface Options {
  seconds: number
  connections: number
  json: string | undefined
  /** Only the rows whose scenario or server contains this (case-insensitive); the bare rows they are ratios of run too. */
  only: string | undefined
  skipScaleOut: boolean
  /** Where the petstore's servers write a V8 CPU profile each (node --cpu-prof) when they stop; undefined: not profiled. */
  cpuProf: string | undefined
  /** The petstore's WORKERS for the rows measured once per worker count, ascending; undefined: those rows run once, WORKERS unset. */
  workers: number[] | undefined
}

/** More worker threads than this on one machine measures the scheduler, not the service. */
const MAX_WORKERS = 64

export class UsageError extends Error {
  override name = 'UsageError'
}

export const USAGE = 'usage: npm run bench -- [--duration SECONDS] [--connections N] [--json PATH] [--only SUBSTRING] [--skip-scale-out] [--cpu-prof DIR] [--workers N[,N …]]'

export function parseOptions (argv: readonly string[]): Options {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        duration: { type: 'string', default: '10' },
        connections: { type: 'string', default: '32' },
        json: { type: 'string' },
        only: { type: 'string' },
        'skip-scale-out': { type: 'boolean', default: false },
        'cpu-prof': { type: 'string' },
        workers: { type: 'string' }
      },
      strict: true,
      allowPositionals: false
    })
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
  const { values } = parsed
  if (values.only?.trim() === '') throw new UsageError('--only needs a non-empty SUBSTRING')
  return {
    seconds: positiveInteger('--duration', values.duration),
    connections: positiveInteger('--connections', values.connections),
    json: values.json === undefined ? undefined : resolve(values.json),
    only: values.only?.toLowerCase(),
    skipScaleOut: values['skip-scale-out'],
    cpuProf: values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']),
    workers: values.workers === undefined ? undefined : workerCounts(values.workers)
  }
}

/** `1,2,4` → [1, 2, 4] */
function workerCounts (raw: string): number[] {
  const counts = raw.split(',').map((part) => positiveInteger('--workers', part.trim()))
  if (counts.some((n) => n > MAX_WORKERS)) throw new UsageError(`--workers takes counts up to ${MAX_WORKERS}, got "${raw}"`)
  if (counts.some((n) => n > 1) && !reusePort(process.versions.node)) {
    throw new UsageError(`more than one worker needs Node.js 22.12 or later (SO_REUSEPORT), this is ${process.version}: npm run test:node -- 24 --run bench --workers ${raw} …`)
  }
  return [...new Set(counts)].sort((a, b) => a - b)
}

/** Whether this Node.js listens with SO_REUSEPORT (`reusePort`, 22.12 and 23.1): the petstore refuses more than one worker without it. */
function reusePort (version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12)
}

function positiveInteger (name: string, raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,5}$/.test(raw)) throw new UsageError(`${name} must be a positive integer, got "${raw ?? ''}"`)
  return Number(raw)
}
