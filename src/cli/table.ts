// Tables for people. Columns are aligned by the width a terminal gives each
// character (CJK and emoji take two columns, combining marks none), not by
// string length, and text from the database is written so that it cannot
// move the cursor, break the line or reorder what follows it.

/**
 * Control characters (Cc), line and paragraph separators, and the
 * bidirectional controls that reorder the text around them
 * (https://trojansource.codes/, Unicode TR 9 §2).
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu
const ESCAPES: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/** `text` with every unsafe character written as an escape: `\n`, `\t`, `\r`, else `\uXXXX`. */
export function printable (text: string): string {
  return text.replace(UNSAFE, (char) => ESCAPES[char] ?? `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`)
}

const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]+$/u
const EMOJI = /\p{Emoji_Presentation}|\uFE0F/u

/** East Asian Wide and Fullwidth code points, as Node's own REPL measures them (lib/internal/util/inspect.js). */
function isFullWidth (code: number): boolean {
  return code >= 0x1100 && (
    code <= 0x115f ||
    code === 0x2329 || code === 0x232a ||
    (code >= 0x2e80 && code <= 0x3247 && code !== 0x303f) ||
    (code >= 0x3250 && code <= 0x4dbf) ||
    (code >= 0x4e00 && code <= 0xa4c6) ||
    (code >= 0xa960 && code <= 0xa97c) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe10 && code <= 0xfe19) ||
    (code >= 0xfe30 && code <= 0xfe6b) ||
    (code >= 0xff01 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1b000 && code <= 0x1b001) ||
    (code >= 0x1f200 && code <= 0x1f251) ||
    (code >= 0x20000 && code <= 0x3fffd))
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/** The columns one grapheme (what a reader sees as one character) takes in a terminal. */
function graphemeWidth (grapheme: string): number {
  if (ZERO_WIDTH.test(grapheme)) return 0
  if (EMOJI.test(grapheme) || isFullWidth(grapheme.codePointAt(0) ?? 0)) return 2
  return 1
}

/** The columns `text` takes in a terminal. */
export function displayWidth (text: string): number {
  let width = 0
  for (const { segment } of segmenter.segment(text)) width += graphemeWidth(segment)
  return width
}

/** `text` cut to at most `max` columns, ending in `…` when cut; never inside a grapheme. */
export function truncate (text: string, max: number): string {
  if (displayWidth(text) <= max) return text
  let kept = ''
  let width = 0
  for (const { segment } of segmenter.segment(text)) {
    const next = graphemeWidth(segment)
    if (width + next > max - 1) break
    kept += segment
    width += next
  }
  return `${kept}…`
}

export interface Column {
  title: string
  /** Numbers read best right-aligned, as `ls -l` shows sizes. */
  align?: 'left' | 'right'
  /** Longer cells are cut with `…` so that one long value does not push every row past the screen. */
  maxWidth?: number
}

/** Rows under a header, columns two spaces apart, every cell made printable; one line each, ending in a newline. */
export function formatTable (columns: readonly Column[], rows: ReadonlyArray<readonly string[]>): string {
  const cells = rows.map((row) => columns.map((column, i) => {
    const text = printable(row[i] ?? '')
    return column.maxWidth === undefined ? text : truncate(text, column.maxWidth)
  }))
  const all = [columns.map((column) => column.title), ...cells]
  const widths = columns.map((_, i) => Math.max(...all.map((row) => displayWidth(row[i] ?? ''))))
  return all.map((row) => row.map((cell, i) => {
    const padding = ' '.repeat((widths[i] ?? 0) - displayWidth(cell))
    return columns[i]?.align === 'right' ? padding + cell : cell + padding
  }).join('  ').trimEnd() + '\n').join('')
}
