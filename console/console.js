// The operator console (docs/KEYS.md: The console): a page over the admin API,
// nothing more. It opens on the overview (one request, however many keys)
// and one page of the key list (one more), searched, filtered, sorted and
// paged by the admin API itself; a key's own page shows its details and
// chart and makes every change the admin API allows. Plans, scopes and
// roll overlaps are read from the overview's `choices`, never written
// here. The page's Content-Security-Policy allows scripts, styles and
// requests from this listener only: nothing here may be inline, use eval
// or reach another origin; text from the API is set as text, never HTML.
import { api, nextPath, token } from './api.js'
import { copyButtons, element, overlapOptions, overlapText, resetCopy, when } from './dom.js'
// Its own panel, loaded when opened (docs/OPERATING.md: The deprecated operation's callers).
import './deprecations.js'
// Its own views, #/webhooks and #/webhooks/ID (docs/WEBHOOKS.md: The console).
import { forgetSecret, setChoices, showWebhooks } from './webhooks.js'

// The charts (and uPlot, the largest file) load while the first requests are under way, not before them.
const charts = import('./chart.js')

const PAGE_SIZE = 25
const $ = (id) => document.getElementById(id)

/** What the overview said a key may be given; filled at sign-in. */
let choices = { plans: [], scopes: [], overlap: { maxSeconds: 0, defaultSeconds: 0, suggestedSeconds: [] } }
/** The list's pages so far: the path of each, the last one shown. */
let pages = []
/** The list's search, filters and sort, as the address holds them: `#/?q=…&state=…&plan=…&sort=…`. */
let listQuery = new URLSearchParams()
/** Counts the drawings of each view: an answer for a drawing since replaced is dropped. */
const drawings = { list: 0, key: 0 }
/** The key the key page shows. */
let shownKey

const day = (iso) => iso === null ? '—' : iso.slice(0, 10)
/** To the minute, in UTC as the column's heading says: `2026-11-28 15:49`. */
const minute = (iso) => iso === null ? '—' : iso.slice(0, 16).replace('T', ' ')
const nameOf = (key) => key.name === '' ? 'unnamed' : key.name

function stateOf (key) {
  if (key.revoked) return 'revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now()) return 'expired'
  return 'active'
}

/** Fills every select and fieldset marked data-choices with the plans or scopes the API named. */
function fillChoices () {
  for (const node of document.querySelectorAll('[data-choices]')) {
    const values = node.dataset.choices === 'plans' ? choices.plans.map((plan) => plan.plan) : choices.scopes
    if (node.tagName === 'SELECT') {
      const any = node.dataset.any === undefined ? [] : [element('option', { text: node.dataset.any, attributes: { value: '' } })]
      // The list's plan filter may come from the address before the plans do.
      const kept = node.dataset.wanted ?? node.value
      node.replaceChildren(...any, ...values.map((value) => element('option', { text: value, attributes: { value } })))
      if (kept !== '' && values.includes(kept)) node.value = kept
    } else {
      const legend = node.querySelector('legend')
      node.replaceChildren(legend, ...values.map((value) => element('label', {}, [
        element('input', { attributes: { type: 'checkbox', value, 'data-scope': value, checked: '' } }), ` ${value}`
      ])))
    }
  }
}

function showToken (title, value) {
  resetCopy($('new-token-copy'))
  $('new-token-title').textContent = title
  $('new-token-value').textContent = value
  $('new-token').hidden = false
  $('new-token').scrollIntoView()
}

/** Runs an action and shows what went wrong; a refused admin token signs out. */
async function act (work, errorNode = $('keys-error')) {
  errorNode.textContent = ''
  try {
    await work()
  } catch (error) {
    if (error.status === 401) return signOut('The admin token was refused; sign in again.')
    errorNode.textContent = error.message
  }
}

// Leaked keys: a key one of whose tokens a secret scanner found in public,
// or whose holder gave it up, says so wherever it is shown, with where,
// when and by which report (docs/KEYS.md: Leaked tokens).

/** The report, for people: a scanner's report by the start of its hash, or the holder. */
function leakReport (leak) {
  return leak.report === 'holder' ? 'given up by its holder' : `secret scanner, report ${leak.report.slice('github:'.length, 'github:'.length + 12)}`
}

/** The facts of a key's leak, for its page; none for a key without one. */
function leakFacts (key) {
  if (key.leak === null) return []
  return [
    ['leaked', when(key.leak.reportedAt)],
    ['reported by', leakReport(key.leak)],
    ...(key.leak.url === null ? [] : [['found at', key.leak.url]]),
    ...(key.leak.source === null ? [] : [['found in', key.leak.source]])
  ]
}

/** A mark beside a leaked key's state in the list; nothing for another key. */
function leakMark (key) {
  if (key.leak === null) return []
  return [' ', element('span', { text: 'leaked', className: 'leaked', attributes: { 'data-leaked': key.leak.reportedAt, title: `${leakReport(key.leak)}, ${when(key.leak.reportedAt)}` } })]
}

/** The overview's count of leaked keys, beside the counts by state. */
function leakCount (node, overview) {
  node.append(element('div', {}, [element('dt', { text: 'leaked' }), element('dd', { text: String(overview.keys.leaked), attributes: { 'data-leak-count': '' } })]))
}

// The overview.

async function renderOverview (overview) {
  choices = overview.choices
  fillChoices()
  setChoices(choices)
  // Drawn before the choices came (a reload on a key's page), the form had no plan or scope to show.
  if (shownKey !== undefined) fillEdit(shownKey)
  const counts = (node, entries, attribute) => node.replaceChildren(...entries.map(([name, count]) => element('div', {}, [
    element('dt', { text: name }), element('dd', { text: String(count), attributes: { [attribute]: name } })
  ])))
  counts($('counts-state'), [['all keys', overview.keys.total], ...Object.entries(overview.keys.byState)], 'data-state-count')
  leakCount($('counts-state'), overview)
  counts($('counts-plan'), Object.entries(overview.keys.byPlan), 'data-plan-count')
  $('busiest').replaceChildren(...(overview.busiest.length === 0
    ? [element('tr', {}, [element('td', { text: `No requests yet today (${overview.today}, UTC).`, attributes: { colspan: '4' } })])]
    : overview.busiest.map(({ key, admitted, refused }) => element('tr', { attributes: { 'data-key': String(key.id) } }, [
      element('td', {}, [element('a', { text: `${key.id} · ${nameOf(key)}`, attributes: { href: `#/keys/${key.id}` } })]),
      element('td', { text: key.plan }),
      element('td', { text: String(admitted) }),
      element('td', { text: String(refused) })
    ]))))
  const { drawUsage, writeTotals } = await charts
  writeTotals($('overview-totals'), overview.usage, `Last ${overview.usage.length} days`)
  drawUsage($('overview-chart'), overview.usage)
}

async function loadOverview () {
  await renderOverview((await api('GET', '/overview')).json)
}

// The list of keys: one page at a time, as the admin API pages it.

// The search, filters and sort are kept in the address (`#/?q=…`), so that
// a search can be bookmarked, shared, reloaded, and gone back to
// (docs/KEYS.md: The console). The form only writes the address; the
// list is drawn from what the address says.

/** The list's fields of a query, in one order, without the defaults: equal searches make equal addresses. */
function listFields (read) {
  const query = new URLSearchParams()
  const q = (read('q') ?? '').trim()
  if (q !== '') query.set('q', q)
  for (const name of ['state', 'plan']) if ((read(name) ?? '') !== '') query.set(name, read(name))
  if ((read('sort') ?? 'id') !== 'id') query.set('sort', read('sort'))
  return query
}

/** The search in an address: the query after `#/?`, empty for any other. */
function queryOfHash (hash) {
  const match = /^#\/\?(.*)$/.exec(hash)
  if (match === null) return new URLSearchParams()
  const query = new URLSearchParams(match[1])
  return listFields((name) => query.get(name))
}

function queryOfForm () {
  const controls = { q: 'search', state: 'filter-state', plan: 'filter-plan', sort: 'sort' }
  return listFields((name) => $(controls[name]).value)
}

const hashOf = (query) => query.size === 0 ? '#/' : `#/?${query}`

/** The form shows `query`; a plan the select does not offer yet is chosen once the overview names the plans (fillChoices). */
function showQuery (query) {
  $('search').value = query.get('q') ?? ''
  $('filter-state').value = query.get('state') ?? ''
  $('filter-plan').dataset.wanted = query.get('plan') ?? ''
  $('filter-plan').value = query.get('plan') ?? ''
  $('sort').value = query.get('sort') ?? 'id'
  // Back from a key's page to the list as it was searched.
  $('back-to-list').setAttribute('href', hashOf(query))
}

/** Takes the address's search as the list's; a new one starts again from its first page. */
function followHash () {
  const query = queryOfHash(window.location.hash)
  if (pages.length > 0 && query.toString() === listQuery.toString()) return
  listQuery = query
  showQuery(query)
  pages = [listPath()]
}

function listPath () {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...Object.fromEntries(listQuery) })
  return `/keys?${query}`
}

/** A search from the form: into the address, whose change draws it; the same search again is drawn again. */
function search () {
  pages = []
  const hash = hashOf(queryOfForm())
  if (hash !== window.location.hash) {
    window.location.hash = hash
    return
  }
  followHash()
  act(() => showPage(pages[0]))
}

async function showPage (path) {
  const drawing = ++drawings.list
  const { json: keys, link } = await api('GET', path)
  if (drawing !== drawings.list) return
  const next = nextPath(link)
  $('keys').replaceChildren(...(keys.length === 0
    ? [element('tr', {}, [element('td', { text: 'No key matches.', attributes: { colspan: '10' } })])]
    : keys.map((key) => {
      const state = stateOf(key)
      return element('tr', { attributes: { 'data-key': String(key.id) } }, [
        element('td', { text: String(key.id) }),
        element('td', {}, [element('a', { text: nameOf(key), attributes: { href: `#/keys/${key.id}` } })]),
        element('td', { text: key.plan }),
        element('td', { text: String(key.concurrency) }),
        element('td', { text: key.scopes.join(' ') }),
        element('td', { text: key.tokenHint, className: 'hint' }),
        element('td', { className: `state-${state}`, attributes: { 'data-state': state } }, [state, ...leakMark(key)]),
        element('td', { text: day(key.createdAt) }),
        element('td', { text: key.expiresAt === null ? 'never' : day(key.expiresAt) }),
        element('td', { text: minute(key.lastUsedAt), className: 'when' })
      ])
    })))
  $('keys').dataset.next = next ?? ''
  $('next').disabled = next === undefined
  $('prev').disabled = pages.length <= 1
  $('page-info').textContent = `Page ${pages.length}`
}

// A key's page.

function fillEdit (key) {
  const form = $('edit')
  const set = (id, value) => {
    $(id).value = value
    $(id).dataset.initial = value
  }
  set('edit-name', key.name)
  set('edit-plan', key.plan)
  set('edit-per-minute', String(key.perMinute))
  set('edit-per-day', String(key.perDay))
  set('edit-concurrency', String(key.concurrency))
  set('edit-expires', key.expiresAt === null ? '' : key.expiresAt.slice(0, 16))
  $('edit-never').checked = key.expiresAt === null
  for (const box of form.querySelectorAll('[data-scope]')) box.checked = key.scopes.includes(box.value)
  const revoked = key.revoked
  for (const control of form.querySelectorAll('input, select, button')) control.disabled = revoked
  $('edit-error').textContent = revoked ? 'A revoked key cannot be changed.' : ''
  $('edit-ok').textContent = ''
}

async function showKey (id) {
  const drawing = ++drawings.key
  const [{ json: key }, { json: usage }] = await Promise.all([api('GET', `/keys/${id}`), api('GET', `/keys/${id}/usage`)])
  if (drawing !== drawings.key) return
  shownKey = key
  const state = stateOf(key)
  $('key').dataset.key = String(key.id)
  $('key-title').textContent = `${key.id} · ${nameOf(key)}`
  $('key-state').textContent = state
  $('key-state').className = `state-${state}`
  $('key-state').dataset.state = state
  $('key-state').append(...leakMark(key))
  // Rolling an expired key would hand out a token that is refused at once; a revoked one cannot change.
  $('roll').hidden = state !== 'active'
  $('revoke').hidden = state === 'revoked'
  const facts = [
    ['plan', key.plan],
    ['limits', `${key.perMinute} a minute, ${key.perDay} a day`],
    ['in flight', `${key.concurrency} at once`],
    ['scopes', key.scopes.join(', ')],
    ['token', key.tokenHint],
    ['environment', key.environment],
    ['created', when(key.createdAt)],
    ['expires', key.expiresAt === null ? 'never' : when(key.expiresAt)],
    ['last used', when(key.lastUsedAt)],
    ...(key.revokedAt === null ? [] : [['revoked', when(key.revokedAt)]]),
    ...(key.previousTokenExpiresAt === null ? [] : [['previous token until', when(key.previousTokenExpiresAt)]]),
    ...leakFacts(key)
  ]
  $('key-facts').replaceChildren(...facts.map(([name, value]) => element('div', {}, [
    element('dt', { text: name }), element('dd', { text: value, attributes: { 'data-fact': name } })
  ])))
  fillEdit(key)
  const { drawUsage, writeTotals } = await charts
  writeTotals($('key-totals'), usage, `Last ${usage.length} days`)
  drawUsage($('key-chart'), usage)
}

/** The fields of the edit form that differ from the key as shown; a limit or cap left empty goes back to the plan's. */
function changes () {
  const body = {}
  const changed = (id) => $(id).value !== $(id).dataset.initial
  if (changed('edit-name')) body.name = $('edit-name').value
  if (changed('edit-plan')) body.plan = $('edit-plan').value
  for (const [id, field] of [['edit-per-minute', 'perMinute'], ['edit-per-day', 'perDay']]) {
    // An enterprise key needs limits of its own: those shown are sent, changed or not.
    if (changed(id) || (body.plan === 'enterprise' && $(id).value !== '')) body[field] = $(id).value === '' ? null : Number($(id).value)
  }
  // Left as shown, the cap is not sent: a key without one of its own takes a new plan's.
  if (changed('edit-concurrency')) body.concurrency = $('edit-concurrency').value === '' ? null : Number($('edit-concurrency').value)
  const scopes = [...$('edit').querySelectorAll('[data-scope]')].filter((box) => box.checked).map((box) => box.value)
  if (scopes.join(' ') !== shownKey.scopes.join(' ')) body.scopes = scopes
  if ($('edit-never').checked) {
    if (shownKey.expiresAt !== null) body.expiresAt = null
  } else if (changed('edit-expires') || (shownKey.expiresAt === null && $('edit-expires').value !== '')) {
    body.expiresAt = `${$('edit-expires').value}:00Z`
  }
  return body
}

function openRoll () {
  const key = shownKey
  const select = $('roll-overlap')
  select.replaceChildren(...overlapOptions(choices.overlap))
  select.value = String(choices.overlap.defaultSeconds)
  $('roll-title').textContent = `Roll key ${key.id} (${nameOf(key)})`
  summarizeRoll()
  // Closed with Escape, a dialog keeps the value it was last closed with.
  $('roll-dialog').returnValue = ''
  $('roll-dialog').showModal()
}

function summarizeRoll () {
  const seconds = Number($('roll-overlap').value)
  const hint = shownKey.tokenHint
  $('roll-summary').dataset.overlap = String(seconds)
  $('roll-summary').textContent = seconds === 0
    ? `The current token (${hint}) stops working at once: every client still using it is refused from now on.`
    : `The current token (${hint}) keeps working for ${overlapText(seconds)}, until ${when(new Date(Date.now() + seconds * 1000).toISOString())}; then only the new token works.`
}

function openRevoke () {
  const key = shownKey
  $('revoke-title').textContent = `Revoke key ${key.id} (${nameOf(key)})?`
  $('revoke-summary').textContent = `Both its tokens (${key.tokenHint}${key.previousTokenExpiresAt === null ? '' : ' and the previous one'}) are refused by every instance within a second. A revoked key cannot be changed or rolled again.`
  $('revoke-dialog').returnValue = ''
  $('revoke-dialog').showModal()
}

// Views, signing in and out.

/** What the address shows: the keys (`#/`, `#/?q=…` searched), a key (`#/keys/ID`), the webhook endpoints (`#/webhooks`) or one (`#/webhooks/ID`). */
function viewOf (hash) {
  const key = /^#\/keys\/(\d+)$/.exec(hash)
  if (key !== null) return { name: 'key', id: Number(key[1]) }
  const webhooks = /^#\/webhooks(?:\/(\d+))?$/.exec(hash)
  if (webhooks !== null) return { name: 'webhooks', id: webhooks[1] === undefined ? undefined : Number(webhooks[1]) }
  return { name: 'list' }
}

function showView (view) {
  $('list-view').hidden = view.name !== 'list'
  $('key-view').hidden = view.name !== 'key'
  $('webhooks-view').hidden = view.name !== 'webhooks'
}

async function route () {
  const view = viewOf(window.location.hash)
  // Only the search changed: the overview above the list is as it was.
  const searched = view.name === 'list' && !$('list-view').hidden
  showView(view)
  if (view.name === 'key') return await act(() => showKey(view.id))
  // It shows its own errors.
  if (view.name === 'webhooks') return await showWebhooks(view.id)
  followHash()
  await act(() => searched ? showPage(pages.at(-1)) : Promise.all([loadOverview(), showPage(pages.at(-1))]))
}

function signOut (message = '') {
  token.clear()
  // Nothing secret stays in the page: a token or signing secret shown and not yet done with goes too.
  $('new-token-value').textContent = ''
  $('new-token').hidden = true
  forgetSecret()
  $('keys-view').hidden = true
  $('sign-out').hidden = true
  $('nav').hidden = true
  $('sign-in').hidden = false
  $('sign-in-error').textContent = message
}

/**
 * A token just typed is tried on the overview alone: a wrong one costs one
 * of the few wrong attempts the admin API allows an address. A token this
 * tab already holds was right before: the overview and the view are asked
 * together, so that the first view waits for the slower of the two only.
 */
async function signIn ({ typed }) {
  pages = []
  followHash()
  const view = viewOf(window.location.hash)
  const draw = () => view.name === 'key' ? showKey(view.id) : view.name === 'webhooks' ? showWebhooks(view.id) : showPage(pages[0])
  const early = typed ? undefined : draw()
  early?.catch(() => {})
  try {
    await renderOverview((await api('GET', '/overview')).json)
  } catch (error) {
    return signOut(error.status === 401 ? 'That is not the admin token.' : error.message)
  }
  $('sign-in').hidden = true
  $('keys-view').hidden = false
  $('sign-out').hidden = false
  $('nav').hidden = false
  showView(view)
  await act(() => early ?? draw())
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault()
  token.set($('admin-token').value.trim())
  $('admin-token').value = ''
  signIn({ typed: true })
})

$('sign-out').addEventListener('click', () => signOut())
document.addEventListener('admin-token-refused', () => signOut('The admin token was refused; sign in again.'))

$('new-token-done').addEventListener('click', () => {
  $('new-token-value').textContent = ''
  $('new-token').hidden = true
})

window.addEventListener('hashchange', () => { if (token.get() !== null && !$('keys-view').hidden) route() })

$('filters').addEventListener('submit', (event) => {
  event.preventDefault()
  search()
})
for (const id of ['filter-state', 'filter-plan', 'sort']) $(id).addEventListener('change', search)
copyButtons()

$('next').addEventListener('click', () => act(async () => {
  const next = $('keys').dataset.next
  if (next === '') return
  pages.push(next)
  await showPage(next)
}))

$('prev').addEventListener('click', () => act(async () => {
  if (pages.length > 1) pages.pop()
  await showPage(pages.at(-1))
}))

$('create').addEventListener('submit', (event) => {
  event.preventDefault()
  act(async () => {
    const body = { plan: $('new-plan').value }
    if ($('new-name').value.trim() !== '') body.name = $('new-name').value.trim()
    if ($('new-per-minute').value !== '') body.perMinute = Number($('new-per-minute').value)
    if ($('new-per-day').value !== '') body.perDay = Number($('new-per-day').value)
    if ($('new-concurrency').value !== '') body.concurrency = Number($('new-concurrency').value)
    body.scopes = [...$('new-scopes').querySelectorAll('[data-scope]')].filter((box) => box.checked).map((box) => box.value)
    if ($('new-expires').value !== '') body.expiresAt = `${$('new-expires').value}:00Z`
    const { json } = await api('POST', '/keys', body)
    $('create').reset()
    showToken(`Token of the new key ${json.id} (${nameOf(json)})`, json.token)
    // Its own page: among thousands, the new key would be on the list's last page.
    window.location.hash = `#/keys/${json.id}`
  }, $('create-error'))
})

$('edit').addEventListener('submit', (event) => {
  event.preventDefault()
  act(async () => {
    const body = changes()
    if (Object.keys(body).length === 0) {
      $('edit-ok').textContent = 'Nothing to change.'
      return
    }
    await api('PATCH', `/keys/${shownKey.id}`, body)
    await showKey(shownKey.id)
    $('edit-ok').textContent = `Saved: ${Object.keys(body).join(', ')}.`
  }, $('edit-error'))
})

$('edit-never').addEventListener('change', () => { if ($('edit-never').checked) $('edit-expires').value = '' })
$('edit-expires').addEventListener('input', () => { if ($('edit-expires').value !== '') $('edit-never').checked = false })

$('roll').addEventListener('click', openRoll)
$('roll-overlap').addEventListener('change', summarizeRoll)
$('roll-dialog').addEventListener('close', () => {
  if ($('roll-dialog').returnValue !== 'roll') return
  const key = shownKey
  const seconds = Number($('roll-overlap').value)
  act(async () => {
    const { json } = await api('POST', `/keys/${key.id}/roll`, { expireCurrentInSeconds: seconds })
    showToken(`New token of key ${key.id} (${nameOf(json)})`, json.token)
    await showKey(key.id)
  })
})

$('revoke').addEventListener('click', openRevoke)
$('revoke-dialog').addEventListener('close', () => {
  if ($('revoke-dialog').returnValue !== 'revoke') return
  const key = shownKey
  act(async () => {
    await api('DELETE', `/keys/${key.id}`)
    await showKey(key.id)
  })
})

if (token.get() !== null) signIn({ typed: false })
