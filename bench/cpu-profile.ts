// The top of a V8 CPU profile (what `npm run bench -- --cpu-prof DIR`
// writes), by self time: where the server's JavaScript thread was when it
// was sampled, function by function, with "(program)" (V8 and native code
// outside any JavaScript frame) and "(garbage collector)" as V8 names them.
// Samples are taken on a wall-clock timer, so a native call's self time also
// holds the system call under it, and what the process's other threads (the
// log's writes, on the same pinned core) take while it waits. Shares are of
// the busy samples: "(idle)", where the loop waited for the load generator,
// is left out and given apart.
//
//   node dist/bench/cpu-profile.js FILE.cpuprofile [N] [--from-seconds S] [--part NAME=REGEX …]
//
// --part gives, besides, a part's inclusive share: the busy samples whose
// stack matches REGEX, the stack written innermost frame first as
// `function file:line < caller file:line < …`. A frame's name alone takes a
// hook's closure with all it calls (an async function's work after an await
// is on a stack of its own, under its name again); `hash .* < .*gate` takes
// only the hashing the gate asks for. Parts may overlap.
//
// --from-seconds leaves out the samples taken in the first S seconds
// (the start, the migrations, the warm-up), so that the share is of the
// measured load alone.
// https://chromedevtools.github.io/devtools-protocol/tot/Profiler/#type-Profile
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
  children?: number[]
}

interface Profile {
  nodes: ProfileNode[]
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'from-seconds': { type: 'string', default: '0' }, part: { type: 'string', multiple: true, default: [] } }
})
const parts = values.part.map((part) => {
  const at = part.indexOf('=')
  if (at <= 0) throw new Error(`--part takes NAME=REGEX, not ${part}`)
  return { name: part.slice(0, at), pattern: new RegExp(part.slice(at + 1)), us: 0 }
})
const [file, top = '25'] = positionals
if (file === undefined) {
  process.stderr.write('usage: node dist/bench/cpu-profile.js FILE.cpuprofile [N] [--from-seconds S]\n')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const fromUs = Number(values['from-seconds']) * 1e6
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parentOf = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
const selfUs = new Map<string, number>()
let at = 0
let total = 0
let idle = 0
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0
  at += delta
  if (at < fromUs) return
  const frame = byId.get(id)?.callFrame
  if (frame === undefined) return
  if (frame.functionName === '(idle)') {
    idle += delta
    return
  }
  const name = nameOf(frame)
  selfUs.set(name, (selfUs.get(name) ?? 0) + delta)
  total += delta
  if (parts.length === 0) return
  const stack: string[] = []
  for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node)) {
    const callFrame = byId.get(node)?.callFrame
    if (callFrame !== undefined) stack.push(nameOf(callFrame))
  }
  const written = stack.join(' < ')
  for (const part of parts) if (part.pattern.test(written)) part.us += delta
})
const rows = [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(top))
process.stdout.write(`${(total / 1e6).toFixed(1)} s busy, ${(idle / 1e6).toFixed(1)} s idle\n| self | function |\n|---:|---|\n`)
for (const [name, us] of rows) process.stdout.write(`| ${(100 * us / total).toFixed(1)} % | \`${name}\` |\n`)
if (parts.length > 0) process.stdout.write('\n| inclusive | part |\n|---:|---|\n')
for (const part of parts) process.stdout.write(`| ${(100 * part.us / total).toFixed(1)} % | ${part.name} (\`${part.pattern.source}\`) |\n`)

function nameOf (frame: ProfileNode['callFrame']): string {
  const where = frame.url === '' ? '' : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
  return `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${where}`
}

/** node:internal/…, a dependency's package and file, or our own file under src/. */
function shortUrl (url: string): string {
  const modules = url.lastIndexOf('/node_modules/')
  if (modules >= 0) return url.slice(modules + '/node_modules/'.length)
  const own = url.indexOf('/dist/')
  return own >= 0 ? url.slice(own + 1) : url.replace(/^file:\/\//, '')
}
