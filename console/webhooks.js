// The console's webhook endpoints (docs/WEBHOOKS.md: The console). #/webhooks
// lists them, a page at a time as the admin API pages them, and adds one;
// #/webhooks/ID shows one: it enables or disables it, changes its URL, events
// and description, rolls its secret after a dialog, deletes it after
// another, sends it a test event, and pages its recent deliveries, each of
// which it can send again. A signing secret is shown once, until Done (or
// sign out), and kept nowhere else: in no variable, in no storage. The event
// types and roll overlaps are the overview's choices, never written here.
// Text from the API is set as text, never HTML.
import { api, nextPath } from './api.js'
import { element, overlapOptions, overlapText, resetCopy, when } from './dom.js'

const PAGE_SIZE = 20
const $ = (id) => document.getElementById(id)

/** What the overview said an endpoint may be given; set at sign-in. */
let choices = { eventTypes: [], overlap: { maxSeconds: 0, defaultSeconds: 0, suggestedSeconds: [] } }
/** Each list's pages so far: the path of each, the last one shown. */
let listPages = []
let deliveryPages = []
/** Counts the drawings of each part: an answer for a drawing since replaced is dropped. */
const drawings = { list: 0, endpoint: 0, deliveries: 0 }
/** The endpoint its page shows (never its secret). */
let shown
/** Said once the next view is drawn (after a delete, the list). */
let notice = ''

/** Runs an action and shows what went wrong; a refused admin token is told to the page, which signs out. */
async function act (work, errorNode = $('webhooks-error')) {
  errorNode.textContent = ''
  say('')
  try {
    await work()
  } catch (error) {
    if (error.status === 401) return document.dispatchEvent(new Event('admin-token-refused'))
    errorNode.textContent = error.message
  }
}

const say = (text) => { $('webhooks-ok').textContent = text }
const day = (iso) => iso.slice(0, 10)
const eventsText = (events) => events === null ? 'all' : events.join(', ')

/** The secret in its panel until Done: the only place it is. */
function showSecret (title, secret) {
  resetCopy($('new-secret-copy'))
  $('new-secret-title').textContent = title
  $('new-secret-value').textContent = secret
  $('new-secret').hidden = false
  $('new-secret').scrollIntoView()
}

/** Takes a secret shown off the page. */
export function forgetSecret () {
  $('new-secret-value').textContent = ''
  $('new-secret').hidden = true
}

// Event types: "all" (those added later too), or the ones ticked.

function fillEvents (fieldset, events) {
  const legend = fieldset.querySelector('legend')
  fieldset.replaceChildren(legend,
    element('label', {}, [element('input', { attributes: { type: 'checkbox', 'data-all': '' } }), ' all, those added later too']),
    ...choices.eventTypes.map((type) => element('label', {}, [element('input', { attributes: { type: 'checkbox', value: type, 'data-event': type } }), ` ${type}`])))
  setEvents(fieldset, events)
}

function setEvents (fieldset, events) {
  fieldset.querySelector('[data-all]').checked = events === null
  for (const box of fieldset.querySelectorAll('[data-event]')) box.checked = events !== null && events.includes(box.value)
  syncEvents(fieldset)
}

/** The types can be ticked only when "all" is not. */
function syncEvents (fieldset) {
  const all = fieldset.querySelector('[data-all]').checked
  for (const box of fieldset.querySelectorAll('[data-event]')) box.disabled = all
}

/** null for every type; else those ticked (none: the admin API says what it needs). */
function eventsOf (fieldset) {
  if (fieldset.querySelector('[data-all]').checked) return null
  return [...fieldset.querySelectorAll('[data-event]')].filter((box) => box.checked).map((box) => box.value)
}

/** Called with the overview's choices, at each sign-in and reload. */
export function setChoices (given) {
  choices = given
  fillEvents($('webhook-new-events'), null)
  fillEvents($('webhook-edit-events'), shown?.events ?? null)
}

// Endpoints: the list.

/** Why and when the service disabled an endpoint; nothing for another. */
function disabledNote (endpoint) {
  if (endpoint.disabledAt === null) return []
  return [element('span', {
    text: `Disabled by the service ${when(endpoint.disabledAt)}: ${endpoint.disabledReason ?? ''}`,
    className: 'disabled-reason',
    attributes: { 'data-disabled-at': endpoint.disabledAt }
  })]
}

const stateOf = (endpoint) => endpoint.enabled ? 'enabled' : 'disabled'

async function showList (path) {
  const drawing = ++drawings.list
  const { json: endpoints, link } = await api('GET', path)
  if (drawing !== drawings.list) return
  const next = nextPath(link)
  $('webhooks').replaceChildren(...(endpoints.length === 0
    ? [element('tr', {}, [element('td', { text: listPages.length > 1 ? 'No more endpoints.' : 'No endpoint yet: add one above.', attributes: { colspan: '6' } })])]
    : endpoints.map((endpoint) => element('tr', { attributes: { 'data-webhook': String(endpoint.id) } }, [
      element('td', { text: String(endpoint.id) }),
      element('td', { className: 'url' }, [element('a', { text: endpoint.url, attributes: { href: `#/webhooks/${endpoint.id}` } })]),
      element('td', { text: eventsText(endpoint.events) }),
      element('td', { className: `state-${stateOf(endpoint)}`, attributes: { 'data-state': stateOf(endpoint) } }, [stateOf(endpoint), ...disabledNote(endpoint)]),
      element('td', { text: endpoint.description }),
      element('td', { text: day(endpoint.createdAt) })
    ]))))
  $('webhooks').dataset.next = next ?? ''
  $('webhooks-next').disabled = next === undefined
  $('webhooks-prev').disabled = listPages.length <= 1
  $('webhooks-page-info').textContent = `Page ${listPages.length}`
}

// An endpoint's page.

function drawEndpoint (endpoint) {
  shown = endpoint
  const state = stateOf(endpoint)
  $('webhook').dataset.webhook = String(endpoint.id)
  $('webhook-title').textContent = `Endpoint ${endpoint.id}${endpoint.description === '' ? '' : ` · ${endpoint.description}`}`
  $('webhook-state').textContent = state
  $('webhook-state').className = `state-${state}`
  $('webhook-state').dataset.state = state
  $('webhook-toggle').textContent = endpoint.enabled ? 'Disable' : 'Enable'
  const disabled = $('webhook-disabled')
  disabled.hidden = endpoint.disabledAt === null
  disabled.textContent = endpoint.disabledAt === null
    ? ''
    : `Disabled by the service ${when(endpoint.disabledAt)}: ${endpoint.disabledReason ?? ''}. It is given no new events, and its pending deliveries wait. Once the receiver is fixed, enable it: they go on, and those that failed meanwhile can be sent again below.`
  const facts = [
    ['url', endpoint.url],
    ['events', eventsText(endpoint.events)],
    ['description', endpoint.description === '' ? '—' : endpoint.description],
    ['created', when(endpoint.createdAt)],
    ['changed', when(endpoint.updatedAt)],
    ...(endpoint.previousSecretExpiresAt === null ? [] : [['previous secret signs until', when(endpoint.previousSecretExpiresAt)]])
  ]
  $('webhook-facts').replaceChildren(...facts.map(([name, value]) => element('div', {}, [
    element('dt', { text: name }), element('dd', { text: value, attributes: { 'data-fact': name } })
  ])))
}

function fillEdit (endpoint) {
  $('webhook-edit-url').value = endpoint.url
  $('webhook-edit-description').value = endpoint.description
  setEvents($('webhook-edit-events'), endpoint.events)
  $('webhook-edit-error').textContent = ''
  $('webhook-edit-ok').textContent = ''
}

const deliveriesPath = (id) => `/webhooks/${id}/deliveries?limit=${PAGE_SIZE}`

/** The last attempt's answer: what went wrong, else its status. */
const answerOf = (delivery) => delivery.lastError ?? (delivery.lastStatus === null ? '—' : `HTTP ${delivery.lastStatus}`)

async function showDeliveries (path) {
  const drawing = ++drawings.deliveries
  const { json: deliveries, link } = await api('GET', path)
  if (drawing !== drawings.deliveries) return
  const next = nextPath(link)
  $('deliveries').replaceChildren(...(deliveries.length === 0
    ? [element('tr', {}, [element('td', { text: 'No delivery in the last 7 days.', attributes: { colspan: '8' } })])]
    : deliveries.map((delivery) => element('tr', { attributes: { 'data-delivery': delivery.webhookId, 'data-state': delivery.state } }, [
      element('td', { text: delivery.webhookId, className: 'hint' }),
      element('td', { text: delivery.type }),
      element('td', { text: when(delivery.eventCreatedAt) }),
      element('td', { text: delivery.state, className: `state-${delivery.state}` }),
      element('td', { text: String(delivery.attempts) }),
      element('td', { text: answerOf(delivery) }),
      element('td', { text: when(delivery.nextAttemptAt) }),
      // A pending delivery is tried anyway: the admin API refuses to resend it.
      element('td', {}, delivery.state === 'pending'
        ? []
        : [element('button', { text: 'Resend', className: 'secondary', attributes: { type: 'button', 'data-resend': delivery.webhookId } })])
    ]))))
  $('deliveries').dataset.next = next ?? ''
  $('deliveries-next').disabled = next === undefined
  $('deliveries-prev').disabled = deliveryPages.length <= 1
  $('deliveries-page-info').textContent = `Page ${deliveryPages.length}`
}

async function openEndpoint (id) {
  const drawing = ++drawings.endpoint
  deliveryPages = [deliveriesPath(id)]
  const [{ json: endpoint }] = await Promise.all([api('GET', `/webhooks/${id}`), showDeliveries(deliveryPages[0])])
  if (drawing !== drawings.endpoint) return
  drawEndpoint(endpoint)
  fillEdit(endpoint)
}

/** The view of `#/webhooks` (id undefined) or `#/webhooks/ID`: drawn, its errors shown. */
export async function showWebhooks (id) {
  $('webhook-list-view').hidden = id !== undefined
  $('webhook-view').hidden = id === undefined
  const told = notice
  notice = ''
  if (id !== undefined) {
    await act(() => openEndpoint(id))
  } else {
    listPages = [`/webhooks?limit=${PAGE_SIZE}`]
    await act(() => showList(listPages[0]))
  }
  if (told !== '') say(told)
}

/** The fields of the change form that differ from the endpoint as shown. */
function changes () {
  const body = {}
  if ($('webhook-edit-url').value.trim() !== shown.url) body.url = $('webhook-edit-url').value.trim()
  if ($('webhook-edit-description').value !== shown.description) body.description = $('webhook-edit-description').value
  const events = eventsOf($('webhook-edit-events'))
  if (JSON.stringify(events) !== JSON.stringify(shown.events)) body.events = events
  return body
}

function openRoll () {
  $('webhook-roll-overlap').replaceChildren(...overlapOptions(choices.overlap))
  $('webhook-roll-overlap').value = String(choices.overlap.defaultSeconds)
  $('webhook-roll-title').textContent = `Roll the signing secret of endpoint ${shown.id}`
  summarizeRoll()
  // Closed with Escape, a dialog keeps the value it was last closed with.
  $('webhook-roll-dialog').returnValue = ''
  $('webhook-roll-dialog').showModal()
}

function summarizeRoll () {
  const seconds = Number($('webhook-roll-overlap').value)
  const older = shown.previousSecretExpiresAt !== null && Date.parse(shown.previousSecretExpiresAt) > Date.now()
    ? ' The secret from before the last roll, still signing, stops at once.'
    : ''
  $('webhook-roll-summary').dataset.overlap = String(seconds)
  $('webhook-roll-summary').textContent = (seconds === 0
    ? `The current secret stops signing at once: ${shown.url} refuses every delivery until it has the new one. For a secret that leaked.`
    : `The current secret keeps signing, beside the new one, for ${overlapText(seconds)}, until ${when(new Date(Date.now() + seconds * 1000).toISOString())}; give ${shown.url} the new secret before then.`) + older
}

function openDelete () {
  $('webhook-delete-title').textContent = `Delete endpoint ${shown.id}?`
  $('webhook-delete-summary').textContent = `Events are no longer sent to ${shown.url}, and its deliveries, pending ones too, are removed with it. This cannot be undone: to stop deliveries for a while, disable it instead.`
  $('webhook-delete-dialog').returnValue = ''
  $('webhook-delete-dialog').showModal()
}

for (const fieldset of document.querySelectorAll('[data-event-choices]')) fieldset.addEventListener('change', () => syncEvents(fieldset))

$('new-secret-done').addEventListener('click', forgetSecret)

$('webhooks-next').addEventListener('click', () => act(async () => {
  const next = $('webhooks').dataset.next
  if (next === '') return
  listPages.push(next)
  await showList(next)
}))

$('webhooks-prev').addEventListener('click', () => act(async () => {
  if (listPages.length > 1) listPages.pop()
  await showList(listPages.at(-1))
}))

$('deliveries-next').addEventListener('click', () => act(async () => {
  const next = $('deliveries').dataset.next
  if (next === '') return
  deliveryPages.push(next)
  await showDeliveries(next)
}))

$('deliveries-prev').addEventListener('click', () => act(async () => {
  if (deliveryPages.length > 1) deliveryPages.pop()
  await showDeliveries(deliveryPages.at(-1))
}))

$('deliveries-refresh').addEventListener('click', () => act(() => openEndpoint(shown.id)))

$('deliveries').addEventListener('click', (event) => {
  const eventId = event.target.closest('[data-resend]')?.dataset.resend
  if (eventId === undefined) return
  const endpoint = shown
  act(async () => {
    await api('POST', `/webhooks/${endpoint.id}/deliveries/${eventId}/resend`)
    say(`${eventId} is pending again: the service sends it within a second${endpoint.enabled ? '' : ', once the endpoint is enabled'}.`)
    await showDeliveries(deliveryPages.at(-1))
  })
})

$('webhook-create').addEventListener('submit', (event) => {
  event.preventDefault()
  act(async () => {
    const body = { url: $('webhook-new-url').value.trim() }
    const events = eventsOf($('webhook-new-events'))
    if (events !== null) body.events = events
    if ($('webhook-new-description').value.trim() !== '') body.description = $('webhook-new-description').value.trim()
    const { json } = await api('POST', '/webhooks', body)
    $('webhook-create').reset()
    setEvents($('webhook-new-events'), null)
    showSecret(`Signing secret of the new endpoint ${json.id} (${json.url})`, json.secret)
    window.location.hash = `#/webhooks/${json.id}`
  }, $('webhook-create-error'))
})

$('webhook-edit').addEventListener('submit', (event) => {
  event.preventDefault()
  act(async () => {
    const body = changes()
    if (Object.keys(body).length === 0) {
      $('webhook-edit-ok').textContent = 'Nothing to change.'
      return
    }
    const { json } = await api('PATCH', `/webhooks/${shown.id}`, body)
    drawEndpoint(json)
    fillEdit(json)
    $('webhook-edit-ok').textContent = `Saved: ${Object.keys(body).join(', ')}.`
  }, $('webhook-edit-error'))
})

$('webhook-toggle').addEventListener('click', () => act(async () => {
  const { json } = await api('PATCH', `/webhooks/${shown.id}`, { enabled: !shown.enabled })
  drawEndpoint(json)
  say(json.enabled ? `Endpoint ${json.id} enabled: its waiting deliveries go on.` : `Endpoint ${json.id} disabled: it is given no new events, and its pending deliveries wait.`)
}))

$('webhook-test').addEventListener('click', () => act(async () => {
  const endpoint = shown
  const { json } = await api('POST', `/webhooks/${endpoint.id}/test`)
  say(`Test event ${json.webhookId} written: the service sends it within a second${endpoint.enabled ? '' : ', once the endpoint is enabled'}.`)
  deliveryPages = [deliveriesPath(endpoint.id)]
  await showDeliveries(deliveryPages[0])
}))

$('webhook-roll').addEventListener('click', openRoll)
$('webhook-roll-overlap').addEventListener('change', summarizeRoll)
$('webhook-roll-dialog').addEventListener('close', () => {
  if ($('webhook-roll-dialog').returnValue !== 'roll') return
  const id = shown.id
  const seconds = Number($('webhook-roll-overlap').value)
  act(async () => {
    const { json: { secret, ...endpoint } } = await api('POST', `/webhooks/${id}/roll-secret`, { expireCurrentInSeconds: seconds })
    showSecret(`New signing secret of endpoint ${id} (${endpoint.url})`, secret)
    drawEndpoint(endpoint)
  })
})

$('webhook-delete').addEventListener('click', openDelete)
$('webhook-delete-dialog').addEventListener('close', () => {
  if ($('webhook-delete-dialog').returnValue !== 'delete') return
  const endpoint = shown
  act(async () => {
    await api('DELETE', `/webhooks/${endpoint.id}`)
    notice = `Endpoint ${endpoint.id} (${endpoint.url}) deleted, with its deliveries.`
    window.location.hash = '#/webhooks'
  })
})
