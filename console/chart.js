// Daily admitted and refused requests as a uPlot chart (uPlot's ES module,
// served by this listener). uPlot's own legend is off, so that no series
// ever reads `--` (the totals are written beside the chart); a legend of
// our own names each line in its colour above it.
import uPlot from './uPlot.esm.js'
import { element } from './dom.js'

/** Requests come whole: the y axis steps by 1, 2, 5, 10, 20, 50…, never by uPlot's default 0.5. */
const WHOLE_STEPS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((power) => [1, 2, 5].map((step) => step * 10 ** power))
export const ADMITTED_COLOUR = '#4056a1'
export const REFUSED_COLOUR = '#a12f2f'
const SERIES = [{ name: 'admitted', colour: ADMITTED_COLOUR }, { name: 'refused', colour: REFUSED_COLOUR }]

/** Each series' name beside a swatch of its line's colour; set through the CSSOM, which the CSP allows, unlike a style attribute. */
function legend () {
  return element('ul', { className: 'legend', attributes: { 'aria-label': 'legend' } }, SERIES.map(({ name, colour }) => {
    const swatch = element('span', { className: 'swatch', attributes: { 'aria-hidden': 'true' } })
    swatch.style.backgroundColor = colour
    return element('li', { attributes: { 'data-series': name } }, [swatch, name])
  }))
}

/** Draws `rows` ({date, admitted, refused}, oldest first) into `container`, replacing what it held. */
export function drawUsage (container, rows) {
  container.replaceChildren(legend())
  const xs = rows.map((row) => Date.parse(`${row.date}T00:00:00Z`) / 1000)
  const width = Math.max(320, Math.min(container.clientWidth || 640, 900))
  return new uPlot({ // eslint-disable-line new-cap -- uPlot's constructor is named so.
    width,
    height: 160,
    legend: { show: false },
    series: [
      {},
      { label: SERIES[0].name, stroke: SERIES[0].colour, fill: 'rgba(64, 86, 161, 0.1)' },
      { label: SERIES[1].name, stroke: SERIES[1].colour }
    ],
    axes: [{}, { label: 'requests a day', incrs: WHOLE_STEPS }],
    scales: { x: { time: true } }
  }, [xs, rows.map((row) => row.admitted), rows.map((row) => row.refused)], container)
}

/** `rows` added up, written into `node` as text and as data-admitted / data-refused. */
export function writeTotals (node, rows, what) {
  const admitted = rows.reduce((sum, row) => sum + row.admitted, 0)
  const refused = rows.reduce((sum, row) => sum + row.refused, 0)
  node.textContent = `${what}: ${admitted} admitted, ${refused} refused.`
  node.dataset.admitted = String(admitted)
  node.dataset.refused = String(refused)
}
