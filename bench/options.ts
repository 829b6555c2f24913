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
}

export class UsageError extends Error {
  override name = 'UsageError'
}

export const USAGE = 'usage: npm run bench -- [--duration SECONDS] [--connections N] [--json PATH] [--only SUBSTRING] [--skip-scale-out] [--cpu-prof DIR]'

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
        'cpu-prof': { type: 'string' }
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
    cpuProf: values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof'])
  }
}

function positiveInteger (name: string, raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,5}$/.test(raw)) throw new UsageError(`${name} must be a positive integer, got "${raw ?? ''}"`)
  return Number(raw)
}
