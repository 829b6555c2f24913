// The operator console (README: Managing keys › The console): a page over
// the admin API, nothing more. The admin token is kept in this tab's
// session storage only, and sent to this listener alone; every number on
// the page comes from the admin API's answers. Charts are uPlot's, served
// from this listener. The page's Content-Security-Policy allows scripts,
// styles and requests from this listener only, so nothing here may use
// inline scripts, inline styles in markup, or another origin.
/* global uPlot */
'use strict'

const API = '/admin/v1'
const TOKEN_KEY = 'petstore-admin-token'
const DAYS = 30
/** Requests come whole: the y axis steps by 1, 2, 5, 10, 20, 50…, never by uPlot's default 0.5. */
const WHOLE_STEPS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((power) => [1, 2, 5].map((step) => step * 10 ** power))

const $ = (id) => document.getElementById(id)

/** Calls the admin API with the token; throws an Error with the Error body's message when it refuses. */
async function api (method, path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY)
  const headers = { authorization: `Bearer ${token}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  const json = text === '' ? undefined : JSON.parse(text)
  if (!response.ok) {
    const error = new Error(json?.message ?? `${response.status} ${response.statusText}`)
    error.status = response.status
    throw error
  }
  return { json, link: response.headers.get('link') }
}

/** Every key, page after page, following Link: rel="next". */
async function allKeys () {
  const keys = []
  let path = '/keys?limit=100'
  while (path !== undefined) {
    const { json, link } = await api('GET', path)
    keys.push(...json)
    const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '')
    path = next === null ? undefined : next[1].slice(API.length)
  }
  return keys
}

function stateOf (key) {
  if (key.revoked) return 'revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now()) return 'expired'
  return 'active'
}

/** An element with text and attributes; never innerHTML, so that a key's name is shown as text whatever it holds. */
function element (tag, { text, className, attributes = {} } = {}, children = []) {
  const node = document.createElement(tag)
  if (text !== undefined) node.textContent = text
  if (className !== undefined) node.className = className
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value)
  for (const child of children) node.append(child)
  return node
}

const day = (iso) => iso === null ? '—' : iso.slice(0, 10)

function showToken (title, token) {
  $('new-token-title').textContent = title
  $('new-token-value').textContent = token
  $('new-token').hidden = false
  $('new-token').scrollIntoView()
}

function chart (container, rows) {
  const xs = rows.map((row) => Date.parse(`${row.date}T00:00:00Z`) / 1000)
  const width = Math.max(320, Math.min(container.clientWidth || 640, 900))
  // eslint-disable-next-line new-cap -- uPlot's constructor is named so.
  return new uPlot({
    width,
    height: 160,
    series: [
      { value: (_u, t) => t === null ? '' : new Date(t * 1000).toISOString().slice(0, 10) },
      { label: 'admitted', stroke: '#4056a1', fill: 'rgba(64, 86, 161, 0.1)' },
      { label: 'refused', stroke: '#a12f2f' }
    ],
    axes: [{}, { label: 'requests a day', incrs: WHOLE_STEPS }],
    scales: { x: { time: true } }
  }, [xs, rows.map((row) => row.admitted), rows.map((row) => row.refused)], container)
}

async function renderKey (key) {
  const state = stateOf(key)
  const usage = element('div', { className: 'chart', attributes: { 'data-usage': String(key.id) } })
  const totals = element('p', { className: 'totals' })
  const actions = element('div', { className: 'actions' })
  if (state !== 'revoked') {
    const overlap = element('select', { attributes: { 'aria-label': `how long the current token of key ${key.id} keeps working` } }, [
      element('option', { text: 'old token stops now', attributes: { value: '0' } }),
      element('option', { text: 'old token works 1 hour', attributes: { value: '3600' } }),
      element('option', { text: 'old token works 1 day', attributes: { value: '86400' } }),
      element('option', { text: 'old token works 7 days', attributes: { value: '604800' } })
    ])
    const roll = element('button', { text: 'Roll', className: 'secondary', attributes: { type: 'button', 'data-roll': String(key.id) } })
    roll.addEventListener('click', () => act(async () => {
      const { json } = await api('POST', `/keys/${key.id}/roll`, { expireCurrentInSeconds: Number(overlap.value) })
      showToken(`New token of key ${key.id} (${json.name || 'unnamed'})`, json.token)
    }))
    const revoke = element('button', { text: 'Revoke', className: 'danger', attributes: { type: 'button', 'data-revoke': String(key.id) } })
    revoke.addEventListener('click', () => act(async () => {
      if (!window.confirm(`Revoke key ${key.id} (${key.name || 'unnamed'})? Both its tokens stop working within a second.`)) return
      await api('DELETE', `/keys/${key.id}`)
    }))
    actions.append(overlap, roll, revoke)
  }
  const facts = [
    ['plan', `${key.plan} (${key.perMinute}/min, ${key.perDay}/day)`],
    ['scopes', key.scopes.join(', ')],
    ['token', key.tokenHint],
    ['created', day(key.createdAt)],
    ['expires', key.expiresAt === null ? 'never' : day(key.expiresAt)],
    ['last used', day(key.lastUsedAt)],
    ...(key.previousTokenExpiresAt === null ? [] : [['old token until', key.previousTokenExpiresAt.replace('T', ' ').slice(0, 16)]])
  ]
  const card = element('article', { className: 'key', attributes: { 'data-key': String(key.id) } }, [
    element('div', { className: 'key-head' }, [
      element('h3', { text: `${key.id} · ${key.name || 'unnamed'}` }),
      element('span', { text: state, className: `state-${state}`, attributes: { 'data-state': state } }),
      actions
    ]),
    element('dl', {}, facts.map(([name, value]) => element('div', {}, [element('dt', { text: name }), element('dd', { text: value })]))),
    totals,
    usage
  ])
  $('keys').append(card)
  const to = new Date().toISOString().slice(0, 10)
  const from = new Date(Date.now() - (DAYS - 1) * 86_400_000).toISOString().slice(0, 10)
  const { json: rows } = await api('GET', `/keys/${key.id}/usage?from=${from}&to=${to}`)
  const admitted = rows.reduce((sum, row) => sum + row.admitted, 0)
  const refused = rows.reduce((sum, row) => sum + row.refused, 0)
  totals.textContent = `Last ${DAYS} days: ${admitted} admitted, ${refused} refused.`
  totals.dataset.admitted = String(admitted)
  totals.dataset.refused = String(refused)
  chart(usage, rows)
}

/** Counts the drawings of the list: one still under way when an action starts another stops, so that no key is listed twice. */
let drawings = 0

async function renderKeys () {
  const drawing = ++drawings
  $('keys').replaceChildren()
  $('keys-error').textContent = ''
  const keys = await allKeys()
  if (drawing !== drawings) return
  if (keys.length === 0) $('keys').append(element('p', { text: 'No keys yet: create one above.' }))
  // Newest first: the one just made is on top.
  for (const key of keys.reverse()) {
    if (drawing !== drawings) return
    await renderKey(key)
  }
}

/** Runs an action, shows what went wrong, and draws the keys again. */
async function act (work) {
  try {
    await work()
    await renderKeys()
  } catch (error) {
    if (error.status === 401) return signOut('The admin token was refused; sign in again.')
    $('keys-error').textContent = error.message
  }
}

function signOut (message = '') {
  sessionStorage.removeItem(TOKEN_KEY)
  $('keys-view').hidden = true
  $('sign-out').hidden = true
  $('sign-in').hidden = false
  $('sign-in-error').textContent = message
}

async function signIn () {
  try {
    await api('GET', '/keys?limit=1')
  } catch (error) {
    return signOut(error.status === 401 ? 'That is not the admin token.' : error.message)
  }
  $('sign-in').hidden = true
  $('keys-view').hidden = false
  $('sign-out').hidden = false
  await act(async () => {})
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault()
  sessionStorage.setItem(TOKEN_KEY, $('admin-token').value.trim())
  $('admin-token').value = ''
  signIn()
})

$('sign-out').addEventListener('click', () => signOut())

$('new-token-done').addEventListener('click', () => {
  $('new-token-value').textContent = ''
  $('new-token').hidden = true
})

$('create').addEventListener('submit', (event) => {
  event.preventDefault()
  $('create-error').textContent = ''
  const body = { plan: $('new-plan').value, scopes: [] }
  if ($('new-name').value.trim() !== '') body.name = $('new-name').value.trim()
  if ($('new-per-minute').value !== '') body.perMinute = Number($('new-per-minute').value)
  if ($('new-per-day').value !== '') body.perDay = Number($('new-per-day').value)
  if ($('new-read').checked) body.scopes.push('pets:read')
  if ($('new-write').checked) body.scopes.push('pets:write')
  if ($('new-expires').value !== '') body.expiresAt = `${$('new-expires').value}T00:00:00Z`
  api('POST', '/keys', body).then(async ({ json }) => {
    $('create').reset()
    showToken(`Token of the new key ${json.id} (${json.name || 'unnamed'})`, json.token)
    await renderKeys()
  }, (error) => {
    if (error.status === 401) return signOut('The admin token was refused; sign in again.')
    $('create-error').textContent = error.message
  })
})

if (sessionStorage.getItem(TOKEN_KEY) !== null) signIn()
