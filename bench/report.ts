// The report: one Markdown row per measured server and scenario, each with
// its CPU time per request as a ratio to its peer's in the same run (the
// simple server a user could write instead, or, scaled out, the same
// operation on SQLite) and the targets of the performance requirement it is
// held to, then every target missed with the figure that missed it. A row
// measured at several worker counts (--workers) is also set against the
// same operation with one worker.
import type { Measurement } from './load.js'

/** A row measured with WORKERS=`count`; `one`: the id of the same operation's WORKERS=1 row. */
export interface Workers { count: number, one: string }

export interface Row {
  id: string
  section: string
  scenario: string
  server: string
  /** The id of the bare server's row this one is a ratio of (its GET or its POST). */
  bare: string
  /** The row whose CPU time per request this one's is compared with; none for the reference servers. */
  peer: { id: string, name: string } | undefined
  targets: readonly Target[]
  measurement: Measurement
  maxRssMiB: number | undefined
  /** The server's CPU time (user and system) during the measured run ÷ its responses (a webhook row: ÷ what it says, bench/webhooks.ts); undefined where /proc is not. */
  cpuMicrosPerResponse: number | undefined
  /** The petstore's log written per response: about 250 bytes when it logs every request, 0 for the others. */
  logBytesPerResponse: number
  /** Set on the rows measured once per worker count. */
  workers: Workers | undefined
  /** The load generator's connections. */
  connections: number
  /** The server's threads that used at least a quarter of the busiest one's CPU time during the measured run; undefined where /proc is not. */
  busyThreads: number | undefined
}

type Rows = ReadonlyMap<string, Row>

/** One target: met or not, with the figure that decides; undefined when what it compares with was not measured. */
export interface Target {
  label: string
  /** The row it compares with, which must be measured too. */
  needs?: string
  check: (row: Row, rows: Rows) => { met: boolean, figure: string } | undefined
}

export function ratioToBare (row: Row, rows: Rows): number | undefined {
  const bare = rows.get(row.bare)
  return bare === undefined ? undefined : row.measurement.requestsPerSecond / bare.measurement.requestsPerSecond
}

/** This row's CPU time per request ÷ another row's, from the same run. */
export function cpuRatio (row: Row, other: Row | undefined): number | undefined {
  const own = row.cpuMicrosPerResponse
  const theirs = other?.cpuMicrosPerResponse
  return own === undefined || theirs === undefined || theirs === 0 ? undefined : own / theirs
}

/** This row's requests per second and CPU time per request ÷ those of the same operation with one worker. */
export function workerRatios (row: Row, rows: Rows): { requests: number | undefined, cpu: number | undefined } {
  const one = row.workers === undefined ? undefined : rows.get(row.workers.one)
  return {
    requests: one === undefined ? undefined : row.measurement.requestsPerSecond / one.measurement.requestsPerSecond,
    cpu: one === undefined ? undefined : cpuRatio(row, one)
  }
}

/** A target on the CPU time per request set against another row's: `met` judges their ratio. */
function cpuTarget (label: string, id: string, met: (ratio: number) => boolean): Target {
  return {
    label,
    needs: id,
    check: (row, rows) => {
      const other = rows.get(id)
      const ratio = cpuRatio(row, other)
      if (ratio === undefined || other === undefined) return undefined
      return {
        met: met(ratio),
        figure: `${(row.cpuMicrosPerResponse ?? 0).toFixed(0)} µs ÷ ${(other.cpuMicrosPerResponse ?? 0).toFixed(0)} µs = ${ratio.toFixed(2)}×`
      }
    }
  }
}

export const Targets = {
  /** CPU time per request at most `at` times another row's: the figure that counts, since req/s follows from it. */
  cpuTimes: (at: number, id: string, name: string): Target => cpuTarget(`CPU ≤ ${Number(at.toFixed(2))}× ${name}`, id, (ratio) => ratio <= at),
  /**
   * As many requests served per CPU-second as `times` another row's, or
   * more: its CPU time per request at most 1/`times` of this one's. How a
   * target in requests a second is judged when the two servers did not run
   * at the same pace.
   */
  servesAtLeast: (times: number, id: string, name: string): Target =>
    cpuTarget(`serves ≥ ${times}× ${name} (CPU)`, id, (ratio) => 1 / ratio >= times),
  /** Requests per second at least `times` another row's: what more workers must buy. */
  requestsAtLeast: (times: number, id: string, name: string): Target => ({
    label: `req/s ≥ ${times}× ${name}`,
    needs: id,
    check: (row, rows) => {
      const other = rows.get(id)
      if (other === undefined) return undefined
      const quotient = row.measurement.requestsPerSecond / other.measurement.requestsPerSecond
      return {
        met: quotient >= times,
        figure: `${Math.round(row.measurement.requestsPerSecond)} ÷ ${Math.round(other.measurement.requestsPerSecond)} req/s = ${quotient.toFixed(2)}×`
      }
    }
  }),
  /** CPU time per request within `share` of another row's, either way: more workers must not cost more per request, nor measure less than they use. */
  cpuWithin: (share: number, id: string, name: string): Target =>
    cpuTarget(`CPU within ±${Math.round(share * 100)} % of ${name}`, id, (ratio) => Math.abs(ratio - 1) <= share),
  /** At least `at` of `what` a second, as the row's req/s column counts them. */
  perSecondAtLeast: (at: number, what: string): Target => ({
    label: `≥ ${at} ${what}/s`,
    check: (row) => ({ met: row.measurement.requestsPerSecond >= at, figure: `${Math.round(row.measurement.requestsPerSecond)} ${what}/s` })
  }),
  p99: (ms: number, what = 'p99'): Target => ({
    label: `${what} ≤ ${ms} ms`,
    check: (row) => ({ met: row.measurement.latencyMs.p99 <= ms, figure: `p99 ${ms2(row.measurement.latencyMs.p99)} ms` })
  }),
  rss: (mib: number): Target => ({
    label: `RSS < ${mib} MiB`,
    check: (row) => row.maxRssMiB === undefined ? undefined : { met: row.maxRssMiB < mib, figure: `${row.maxRssMiB.toFixed(1)} MiB` }
  }),
  p50Within: (times: number, id: string, name: string): Target => ({
    label: `p50 ≤ ${times}× ${name}`,
    needs: id,
    check: (row, rows) => {
      const other = rows.get(id)
      if (other === undefined) return undefined
      const quotient = row.measurement.latencyMs.p50 / other.measurement.latencyMs.p50
      return {
        met: quotient <= times,
        figure: `p50 ${ms2(row.measurement.latencyMs.p50)} ms ÷ ${ms2(other.measurement.latencyMs.p50)} ms = ${quotient.toFixed(3)}×`
      }
    }
  })
}

type Met = 'yes' | 'no' | '—'

function met (row: Row, rows: Rows): Met {
  if (row.targets.length === 0) return '—'
  const checks = row.targets.map((t) => t.check(row, rows))
  if (checks.some((c) => c?.met === false)) return 'no'
  return checks.some((c) => c === undefined) ? '—' : 'yes'
}

/** The Markdown table of one section's rows; with worker counts among them, three columns more. */
export function table (section: readonly Row[], rows: Rows): string {
  const scaled = section.some((row) => row.workers !== undefined)
  const header = ['scenario', 'server', 'req/s', 'CPU µs', '× peer CPU', 'peer', 'p50 ms', 'p99 ms', 'max RSS MiB', 'target', 'met']
  const right = [false, false, true, true, true, false, true, true, true, false, false]
  if (scaled) {
    header.splice(4, 0, '× 1 worker req/s', '× 1 worker CPU', 'busy threads')
    right.splice(4, 0, true, true, true)
  }
  const cells = section.map((row) => {
    const m = row.measurement
    const ratio = row.peer === undefined ? undefined : cpuRatio(row, rows.get(row.peer.id))
    const toOne = workerRatios(row, rows)
    return [
      row.scenario,
      row.server,
      Math.round(m.requestsPerSecond).toString(),
      row.cpuMicrosPerResponse === undefined ? '—' : row.cpuMicrosPerResponse.toFixed(0),
      ...(scaled ? [fixed2(toOne.requests), fixed2(toOne.cpu), row.busyThreads?.toString() ?? '—'] : []),
      fixed2(ratio),
      row.peer?.name ?? '—',
      ms2(m.latencyMs.p50),
      ms2(m.latencyMs.p99),
      row.maxRssMiB === undefined ? '—' : row.maxRssMiB.toFixed(1),
      row.targets.length === 0 ? '—' : row.targets.map((t) => t.label).join('; '),
      met(row, rows)
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)))
  const line = (values: readonly string[]): string =>
    '| ' + values.map((v, i) => right[i] === true ? v.padStart(widths[i] ?? 0) : v.padEnd(widths[i] ?? 0)).join(' | ') + ' |'
  const rule = '|' + widths.map((w, i) => right[i] === true ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2)).join('|') + '|'
  return [line(header), rule, ...cells.map(line)].join('\n') + '\n'
}

/** Each target missed, with the figure that missed it. */
export function missed (rows: Rows): string[] {
  return [...rows.values()].flatMap((row) => row.targets.flatMap((target) => {
    const check = target.check(row, rows)
    return check?.met === false ? [`${row.scenario} (${row.server}): ${target.label}, measured ${check.figure}`] : []
  }))
}

function fixed2 (value: number | undefined): string {
  return value === undefined ? '—' : value.toFixed(2)
}

function ms2 (value: number): string {
  return Number.isFinite(value) ? value.toFixed(2) : '—'
}
