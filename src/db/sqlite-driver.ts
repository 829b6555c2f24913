// The SQLite driver for the running Node.js: better-sqlite3, in the one major
// version that works on it. Both have the same API, so everything else
// imports the driver from here and never names a version.
//
// - better-sqlite3 12 aborts the process on Node 24 and later: Node 24's
//   `node::ObjectWrap` destructor removes an environment cleanup hook, and a
//   Statement collected by the GC then fails `(env) != nullptr`
//   (https://github.com/WiseLibs/better-sqlite3/issues/1515, closed without a
//   fix for 12.x; https://github.com/nodejs/node/issues/65446).
// - better-sqlite3 13 moved to Node-API and ships prebuilt binaries, but
//   declares Node >= 22, and its binary crashes when loaded on Node 20.
//
// So Node 22 and later load 13, and Node 20 loads 12 through the npm alias
// `better-sqlite3-node20` (an optional dependency: if it cannot be built on
// a newer Node, the install still succeeds).
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

const NODE_MAJOR = Number(process.versions.node.split('.')[0])
const PACKAGE = NODE_MAJOR >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20'

function load (): typeof BetterSqlite3 {
  const require = createRequire(import.meta.url)
  try {
    return require(PACKAGE) as typeof BetterSqlite3
  } catch (error) {
    throw new Error(`cannot load the SQLite driver ${PACKAGE} for Node ${process.versions.node}: ` +
      'run `npm install` again with this Node.js, or use Node.js 22 or later', { cause: error })
  }
}

export const Database = load()
// The driver's instance type, under the same name as its constructor.
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type Database = BetterSqlite3.Database
export const SqliteError = Database.SqliteError
// An error the driver throws (its typings name only the class's type).
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type SqliteError = InstanceType<typeof SqliteError>
