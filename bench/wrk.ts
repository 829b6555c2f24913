// wrk, driven by a Lua script written for each run: it sets the request,
// counts every response's status against the expected one (wrk itself only
// counts statuses above 399, which is every answer of a 401 or 429 run), and
// prints its figures as one JSON line when the run is done.
// https://github.com/wg/wrk/blob/master/SCRIPTING
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pinned } from './cpus.js'
import { runToEnd, type LoadGenerator, type LoadRequest, type Measurement } from './load.js'

const RESULT = 'BENCH-RESULT '

interface WrkResult {
  requests: number
  durationUs: number
  p50Us: number
  p99Us: number
  expected: number
  unexpected: number
  unexpectedStatus: number
  connect: number
  read: number
  write: number
  timeout: number
}

/** `executable`: wrk's path; `dir`: where each run's script is written. */
export function wrkGenerator (executable: string, dir: string): LoadGenerator {
  return {
    name: 'wrk',
    async measure (request, { seconds, connections, cpu, signal }) {
      const script = join(dir, 'wrk.lua')
      writeFileSync(script, luaScript(request))
      // One thread: one core is all the generator has.
      const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', script, request.url]
      const stdout = await runToEnd(pinned(cpu, executable, args), signal)
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT))
      if (line === undefined) throw new Error(`wrk printed no result line:\n${stdout.slice(-2000)}`)
      return toMeasurement(JSON.parse(line.slice(RESULT.length)) as WrkResult)
    }
  }
}

function toMeasurement (r: WrkResult): Measurement {
  const seconds = r.durationUs / 1e6
  return {
    requestsPerSecond: seconds > 0 ? r.requests / seconds : 0,
    responses: r.requests,
    latencyMs: { p50: r.p50Us / 1000, p99: r.p99Us / 1000 },
    unexpected: r.unexpected + Math.max(0, r.requests - r.expected - r.unexpected),
    unexpectedStatus: r.unexpectedStatus,
    errors: r.connect + r.read + r.write,
    timeouts: r.timeout,
    seconds
  }
}

function luaScript (request: LoadRequest): string {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`)
  return `-- Written by bench/wrk.ts for one run.
wrk.method = ${lua(request.method)}
${request.body === undefined ? '' : `wrk.body = ${lua(request.body)}`}
${headers.join('\n')}

local expect = ${request.expect}
expected = 0
unexpected = 0
unexpected_status = 0

${request.forwardedFor === true ? FORWARDED_FOR : ''}

response = function (status, headers, body)
  if status == expect then
    expected = expected + 1
  else
    unexpected = unexpected + 1
    unexpected_status = status
  end
end

local threads = {}

setup = function (thread)
  table.insert(threads, thread)
end

done = function (summary, latency, requests)
  local ok, bad, status = 0, 0, 0
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("expected")
    bad = bad + thread:get("unexpected")
    if thread:get("unexpected_status") ~= 0 then status = thread:get("unexpected_status") end
  end
  local e = summary.errors
  io.write(string.format('${RESULT}{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"expected":%d,"unexpected":%d,"unexpectedStatus":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), ok, bad, status,
    e.connect, e.read, e.write, e.timeout))
end
`
}

/** 65,536 addresses in turn: one reaches the anonymous limit (60 a minute) only above 65,536 requests a second. */
const FORWARDED_FOR = `local sent = 0
request = function ()
  sent = sent + 1
  wrk.headers["X-Forwarded-For"] = string.format("10.0.%d.%d", math.floor(sent / 256) % 256, sent % 256)
  return wrk.format()
end`

/** A Lua string literal; only printable ASCII is ever needed here. */
function lua (text: string): string {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error(`not printable ASCII: ${JSON.stringify(text)}`)
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}
