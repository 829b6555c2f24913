// Which core runs what. On a small machine a server and its load generator
// that share cores measure each other as much as the server: with taskset
// the server gets one core and the generator another, and the report says
// so, or why it could not be done.
// https://man7.org/linux/man-pages/man1/taskset.1.html
import { spawnSync } from 'node:child_process'

export type Pinning =
  | { done: true, server: number, load: number }
  | { done: false, reason: string }

/** The first two cores this process may run on, one for the servers and one for the generator. */
export function choosePinning (): Pinning {
  const result = spawnSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' })
  if (result.error !== undefined) return { done: false, reason: `taskset cannot be run (${result.error.message})` }
  if (result.status !== 0) return { done: false, reason: `taskset failed: ${result.stderr.trim()}` }
  // "pid 123's current affinity list: 0,2-3"
  const list = /list:\s*(\S+)/.exec(result.stdout)?.[1]
  const cores = list === undefined ? [] : cpuList(list)
  const [server, load] = cores
  if (server === undefined || load === undefined) return { done: false, reason: `this process may run on ${cores.length} core(s) only (${list ?? '?'})` }
  return { done: true, server, load }
}

/** `0,2-3` → [0, 2, 3] */
function cpuList (text: string): number[] {
  return text.split(',').flatMap((part) => {
    const [from, to = from] = part.split('-').map(Number)
    if (from === undefined || to === undefined || !Number.isInteger(from) || !Number.isInteger(to)) return []
    return Array.from({ length: to - from + 1 }, (_, i) => from + i)
  })
}

/** The command that runs `command` (every thread of it) on `cpu`, or as it is when `cpu` is undefined. */
export function pinned (cpu: number | undefined, command: string, args: readonly string[]): { command: string, args: string[] } {
  return cpu === undefined ? { command, args: [...args] } : { command: 'taskset', args: ['-c', String(cpu), command, ...args] }
}

/**
 * Moves running processes, every thread of each, to `cpu`; a process forks
 * its children there from then on. Says why not when taskset fails.
 */
export function moveTo (cpu: number, pids: readonly number[]): string | undefined {
  for (const pid of pids) {
    const result = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { encoding: 'utf8' })
    if (result.error !== undefined || result.status !== 0) return `taskset -p ${pid} failed: ${result.error?.message ?? result.stderr.trim()}`
  }
  return undefined
}
