// The console's view of who still calls the deprecated operations (docs/OPERATING.md:
// The deprecated operation's callers): GET /admin/v1/deprecations, asked for
// when the panel is opened, and again each time it is. Text from the API is
// set as text, never HTML.
import { api } from './api.js'

const panel = document.getElementById('deprecations-panel')
const body = document.getElementById('deprecations')
const error = document.getElementById('deprecations-error')

function cell (text, children = []) {
  const node = document.createElement('td')
  if (text !== undefined) node.textContent = text
  node.append(...children)
  return node
}

function row (cells, attributes = {}) {
  const node = document.createElement('tr')
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value)
  node.append(...cells)
  return node
}

const when = (iso) => `${iso.slice(0, 16).replace('T', ' ')} UTC`

function keyLink (key) {
  const link = document.createElement('a')
  link.textContent = `${key.id} · ${key.name === '' ? 'unnamed' : key.name}`
  link.href = `#/keys/${key.id}`
  return link
}

/** A row per operation and caller; an operation nobody called says so. */
function render (operations) {
  body.replaceChildren(...operations.flatMap(({ operationId, sunset, callerCount, callers }) => {
    const heading = row([cell(undefined, [Object.assign(document.createElement('strong'), { textContent: operationId })]),
      cell(`sunset ${sunset.slice(0, 10)}; ${callerCount} key${callerCount === 1 ? '' : 's'} in the last 30 days`)], { 'data-operation': operationId })
    heading.lastChild.colSpan = 4
    const rows = callers.map(({ key, calls, lastCall }) => row([
      cell(undefined, [keyLink(key)]), cell(key.plan), cell(key.tokenHint), cell(key.revoked ? 'revoked' : ''), cell(String(calls)), cell(when(lastCall))
    ], { 'data-caller': String(key.id) }))
    if (callerCount > callers.length) rows.push(row([cell(`and ${callerCount - callers.length} more keys, with fewer calls`)]))
    return [heading, ...rows]
  }))
}

async function load () {
  error.textContent = ''
  try {
    render((await api('GET', '/deprecations')).json)
  } catch (failure) {
    error.textContent = failure.message
  }
}

panel.addEventListener('toggle', () => { if (panel.open) load() })
