// What every part of the console draws with: an element made from text
// (never HTML), and times and overlaps in words.

export function element (tag, { text, className, attributes = {} } = {}, children = []) {
  const node = document.createElement(tag)
  if (text !== undefined) node.textContent = text
  if (className !== undefined) node.className = className
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value)
  node.append(...children)
  return node
}

export const when = (iso) => iso === null ? '—' : `${iso.slice(0, 16).replace('T', ' ')} UTC`

/** 0 → "stops at once"; 3600 → "1 hour"; 86400 → "1 day"; 259200 → "3 days". */
export function overlapText (seconds) {
  if (seconds === 0) return 'stops at once'
  const [size, unit] = seconds % 86_400 === 0 ? [seconds / 86_400, 'day'] : seconds % 3_600 === 0 ? [seconds / 3_600, 'hour'] : [seconds / 60, 'minute']
  return `${size} ${unit}${size === 1 ? '' : 's'}`
}

/** The overlaps a roll dialog offers, from the overview's choices, the default among them. */
export function overlapOptions (overlap) {
  const offered = [...new Set([...overlap.suggestedSeconds, overlap.defaultSeconds])].filter((seconds) => seconds <= overlap.maxSeconds)
  return offered.map((seconds) => element('option', {
    text: seconds === 0 ? 'no: it stops at once' : `for ${overlapText(seconds)}`,
    attributes: { value: String(seconds) }
  }))
}

// A token or signing secret shown once has a Copy button: it writes the
// text to the clipboard where the page may (https, or 127.0.0.1 and
// localhost), and otherwise selects it for the operator's own Ctrl+C: a
// page served over plain http from another address has no clipboard API.

/** The button as it was before a copy: shown again with each new token or secret. */
export function resetCopy (button) {
  delete button.dataset.copied
  button.textContent = 'Copy'
}

function select (node) {
  const range = document.createRange()
  range.selectNodeContents(node)
  const selection = window.getSelection()
  selection.removeAllRanges()
  selection.addRange(range)
}

/** Copies the text of the element the button names (data-copy); says "Copied", or that the text is selected instead. */
async function copy (button) {
  const node = document.getElementById(button.dataset.copy)
  try {
    // Missing (an insecure origin) or refused (no permission): the selection below.
    await navigator.clipboard.writeText(node.textContent)
    button.dataset.copied = 'clipboard'
    button.textContent = 'Copied'
  } catch {
    select(node)
    button.dataset.copied = 'selected'
    button.textContent = 'Selected: press Ctrl+C'
  }
}

/** Every Copy button on the page, now and later. */
export function copyButtons () {
  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-copy]')
    if (button !== null) copy(button)
  })
}
