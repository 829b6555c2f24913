// The log's sink: lines batched as bytes, written whole and in order,
// whatever their length and whatever characters they hold.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileSink } from '../../src/telemetry/log.js'
import { makeTempDir, removeTempDir } from '../support/process.js'

describe('the log\'s sink', () => {
  const dir = makeTempDir()
  after(() => removeTempDir(dir))

  it('When lines of every length, some of characters that take 2 to 4 bytes, are written, then the file holds them all, in order, byte for byte', async () => {
    // Arrange: lines around and past the batch (32 KiB, with room for 64 KiB: a line of up to 21,845 UTF-16 units goes in whole), of 1- to 4-byte characters.
    const file = join(dir, 'lines.log')
    const fd = openSync(file, 'w')
    const sink = fileSink(fd)
    const pieces = ['a', 'é', '€', '🐕']
    const lines = [10, 2_000, 9_000, 21_844, 21_845, 21_846, 1, 30_000, 300, 70_000, 20].flatMap((length, i) =>
      pieces.map((piece, k) => `${i}.${k} ${piece.repeat(length)}\n`))

    // Act
    for (const line of lines) sink.write(line)
    await sink.flush(5_000)
    closeSync(fd)

    // Assert
    assert.equal(readFileSync(file, 'utf8'), lines.join(''))
    assert.equal(sink.dropped(), 0)
  })
})
