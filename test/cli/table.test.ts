import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { displayWidth, formatTable, printable, truncate, type Column } from '../../src/cli/table.js'

const COLUMNS: readonly Column[] = [{ title: 'ID', align: 'right' }, { title: 'NAME', maxWidth: 12 }, { title: 'PLAN' }]

/** The display column at which `value` starts on `line`. */
function columnOf (line: string, value: string): number {
  const index = line.indexOf(value)
  assert.ok(index >= 0, `${JSON.stringify(value)} is not on ${JSON.stringify(line)}`)
  return displayWidth(line.slice(0, index))
}

describe('tables for people', () => {
  it('When names hold wide, combining and emoji characters, then each is padded by the columns a terminal gives it', () => {
    // Arrange: 3, 6 (three wide), 4 (e + combining acute), 5 (a two-column emoji with its modifier) and 4 (two wide) columns.
    const names = ['Rex', '猫の店', 'Cafe\u0301', '👍🏽 ok', '한국']

    // Act
    const table = formatTable(COLUMNS, names.map((name, i) => [String(i + 1), name, `plan${i}`]))

    // Assert
    assert.equal(table, [
      'ID  NAME    PLAN',
      ' 1  Rex     plan0',
      ' 2  猫の店  plan1',
      ' 3  Cafe\u0301    plan2',
      ' 4  👍🏽 ok   plan3',
      ' 5  한국    plan4',
      ''
    ].join('\n'))
  })

  it('When a name is longer than its column, then it is cut with … and the columns stay aligned', () => {
    // Arrange
    const long = 'a'.repeat(50)
    const wide = '猫'.repeat(20)

    // Act
    const lines = formatTable(COLUMNS, [['1', long, 'free'], ['2', wide, 'pro'], ['3', 'short', 'business']]).split('\n').slice(0, -1)

    // Assert
    assert.ok(lines[1]?.includes(`${'a'.repeat(11)}…`), lines[1])
    assert.ok(!lines[1]?.includes('a'.repeat(12)), lines[1])
    assert.ok(lines[2]?.includes(`${'猫'.repeat(5)}…`), lines[2])
    // ID (2 columns), two spaces, NAME cut to its 12 columns, two spaces.
    const planColumn = 2 + 2 + 12 + 2
    assert.deepEqual([columnOf(lines[1] ?? '', 'free'), columnOf(lines[2] ?? '', 'pro'), columnOf(lines[3] ?? '', 'business')], [planColumn, planColumn, planColumn])
  })

  it('When a name holds control and bidirectional characters, then they are printed as escapes and each row stays one line', () => {
    // Arrange: a new line, a terminal colour sequence, a tab, and a right-to-left override.
    const name = 'a\nb\x1b[31mred\tc\u202Egnp.exe'

    // Act
    const table = formatTable([{ title: 'NAME' }], [[name]])

    // Assert
    assert.equal(table, 'NAME\na\\nb\\u001b[31mred\\tc\\u202egnp.exe\n')
    for (const line of table.split('\n')) assert.doesNotMatch(line, /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u)
  })

  it('When a number column is right-aligned, then its values end at the same column as its title', () => {
    // Act
    const lines = formatTable(COLUMNS, [['7', 'x', 'free'], ['1234', 'y', 'pro']]).split('\n')

    // Assert
    assert.deepEqual(lines.slice(0, 3).map((line) => line.slice(0, 4)), ['  ID', '   7', '1234'])
  })

  it('When text is measured and cut, then widths count terminal columns and a grapheme is never split', () => {
    // Assert
    assert.equal(displayWidth('abc'), 3)
    assert.equal(displayWidth('猫の店'), 6)
    assert.equal(displayWidth('Cafe\u0301'), 4)
    assert.equal(displayWidth('a\u200bb'), 2)
    assert.equal(displayWidth('👨‍👩‍👧'), 2)
    assert.equal(truncate('👨‍👩‍👧👨‍👩‍👧', 3), '👨‍👩‍👧…')
    assert.equal(truncate('short', 5), 'short')
    assert.equal(printable('plain 猫 text'), 'plain 猫 text')
  })
})
