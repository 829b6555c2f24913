// A copy of a SQLite store taken while a service writes to it (docs/OPERATING.md:
// Backups): `VACUUM INTO` is one read transaction, a consistent snapshot that in WAL
// mode never blocks writers (https://www.sqlite.org/lang_vacuum.html#vacuuminto). Written beside
// the target, checked, fsynced, then renamed over it, so an interrupted backup leaves the target as it was.
import { closeSync, fsyncSync, openSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { Database } from './sqlite/driver.js'

export interface BackupCounts {
  keys: bigint
  pets: bigint
}

/** Thrown when the store or the target cannot be what a backup needs; the message says which. */
export class BackupRefused extends Error {
  override name = 'BackupRefused'
}

/** Where the copy is written before it becomes `file`: the same folder (a rename is atomic only within one file system), a name of this process's own. */
function partialFileOf (file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.partial`)
}

function fsyncPath (path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * The files SQLite keeps beside a database, named after its real path
 * (https://www.sqlite.org/tempfiles.html): renamed over, one of them
 * corrupts a store in use as surely as the database file itself would.
 */
const COMPANIONS = ['-wal', '-shm', '-journal']

/**
 * Refuses a `target` that is the store at `sourcePath` or one of its
 * companions however it is reached: a folder on the way may be a symlink,
 * and a name may be a symlink or a hard link to it, so neither the paths as
 * given nor their resolve() tell. The real folder and the name, and the
 * device and inode of whatever the name leads to, do.
 */
function refuseTheStoreItself (sourcePath: string, target: string): void {
  const store = realpathSync(sourcePath)
  const real = join(realpathSync(dirname(target)), basename(target))
  let followed = real
  try {
    followed = realpathSync(real)
  } catch {
    // Nothing there, or a symlink to nothing: the name is all there is to compare.
  }
  const reached = statSync(real, { bigint: true, throwIfNoEntry: false })
  for (const suffix of ['', ...COMPANIONS]) {
    const file = `${store}${suffix}`
    const existing = statSync(file, { bigint: true, throwIfNoEntry: false })
    const same = real === file || followed === file ||
      (reached !== undefined && existing !== undefined && reached.dev === existing.dev && reached.ino === existing.ino)
    if (same) throw new BackupRefused(`the backup would overwrite ${suffix === '' ? 'the database itself' : `the database's ${suffix} file`}; give another FILE`)
  }
}

/** The counts of a database file, after SQLite has checked all of it. */
function checkCopy (path: string): BackupCounts {
  const copy = new Database(path, { readonly: true, fileMustExist: true })
  try {
    copy.defaultSafeIntegers(true)
    const problems = copy.prepare<[], { integrity_check: string }>('PRAGMA integrity_check').all()
    if (problems.length !== 1 || problems[0]?.integrity_check !== 'ok') {
      throw new Error(`the copy failed SQLite's integrity check: ${problems.map((row) => row.integrity_check).join('; ')}`)
    }
    const count = (table: string): bigint => copy.prepare<[], bigint>(`SELECT count(*) FROM ${table}`).pluck().get() ?? 0n
    return { keys: count('api_keys'), pets: count('pets') }
  } finally {
    copy.close()
  }
}

/** Copies the SQLite database at `sourcePath` to `file`, whole or not at all, and counts what the copy holds. */
export function backupSqlite (sourcePath: string, file: string): BackupCounts {
  if (sourcePath === ':memory:') throw new BackupRefused('an in-memory database lasts only as long as its process and cannot be backed up')
  const target = resolve(file)
  try {
    statSync(sourcePath)
  } catch {
    throw new BackupRefused(`there is no database at ${sourcePath}`)
  }
  if (statSync(dirname(target), { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new BackupRefused(`the folder ${dirname(target)} does not exist`)
  }
  refuseTheStoreItself(sourcePath, target)
  const partial = partialFileOf(target)
  // Created empty first, as SQLite accepts for VACUUM INTO: the copy holds
  // the key hashes and the cursor secret, so it is the owner's alone.
  closeSync(openSync(partial, 'wx', 0o600))
  try {
    const source = new Database(sourcePath, { fileMustExist: true, timeout: 5000 })
    try {
      source.prepare('VACUUM INTO ?').run(partial)
    } finally {
      source.close()
    }
    const counts = checkCopy(partial)
    fsyncPath(partial)
    renameSync(partial, target)
    // The rename itself lasts only once the folder is on disk.
    fsyncPath(dirname(target))
    return counts
  } catch (error) {
    rmSync(partial, { force: true })
    throw error
  }
}
