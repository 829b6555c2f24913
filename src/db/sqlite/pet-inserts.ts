// How a group commit (group-commit.ts) writes its new animals: one
// transaction, with no savepoint each since a validated animal's insert rarely
// fails; if one does, the group is done again with a savepoint each, where it
// fails alone (docs/INTERNALS.md, section "SQLite").
import { NEW_PET_COLUMNS, NEW_PET_COLUMN_LIST, newPetValues, petSelectList } from '../pet-columns.js'
import { listenedSql } from '../rows.js'
import type { CreateOnceResult, PetRecord } from '../storage.js'
import type { Database } from './driver.js'
import { isUnavailable } from './errors.js'
import { GroupRolledBack, type GroupCommitOptions, type InsertOutcome, type PendingInsert } from './group-commit.js'
import { StatementPerLimit } from './statement-per-limit.js'
import { PET_JSON } from './statements.js'

/** The most animals one INSERT statement of a group commit adds; a larger group takes several. */
const INSERT_ROWS = 64

const ROW_PLACEHOLDERS = `(${NEW_PET_COLUMNS.map(() => '?').join(', ')})`

/** The two ways of committing a group, each in an IMMEDIATE transaction. */
export function petInserts (db: Database): Pick<GroupCommitOptions, 'commitAll' | 'commitEach'> {
  const insertPet = db.prepare<[values: unknown[]]>(
    `INSERT INTO pets (${NEW_PET_COLUMN_LIST}) VALUES ${ROW_PLACEHOLDERS} RETURNING id`)
  // Only an expired record can be in the way here: a live one was found first, in the same transaction.
  const insertIdempotency = db.prepare<[bigint, string, string, bigint, bigint]>(
    `INSERT INTO idempotency_keys (api_key_id, key, request_hash, pet_id, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash,
       pet_id = excluded.pet_id, created_at = excluded.created_at`)
  const findIdempotency = db.prepare<[bigint, string, bigint], PetRecord & { requestHash: string }>(
    `SELECT ${petSelectList('p')}, i.request_hash AS "requestHash"
     FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id
     WHERE i.api_key_id = ? AND i.key = ? AND i.created_at > ?`)
  // Each new animal's pet.created event, in the group's transaction: a 201
  // means the event is as durable as the animal (docs/WEBHOOKS.md). The
  // event's data is the Pet as the API writes it, made by SQLite from the rows;
  // none is written while no endpoint wants it.
  const announce = db.prepare<[bigint, bigint, bigint]>(
    `INSERT INTO events (type, created_at, data) SELECT 'pet.created', ?, ${PET_JSON} FROM pets
     WHERE id BETWEEN ? AND ? AND ${listenedSql("'pet.created'")} ORDER BY id`)
  const insertRows = new StatementPerLimit((rows) => db.prepare<[values: unknown[]]>(
    `INSERT INTO pets (${NEW_PET_COLUMN_LIST}) VALUES ${Array.from({ length: rows }, () => ROW_PLACEHOLDERS).join(', ')}`), INSERT_ROWS)

  const insert = ({ pet, idempotency }: PendingInsert): CreateOnceResult => {
    if (idempotency !== undefined) {
      const earlier = findIdempotency.get(BigInt(idempotency.apiKeyId), idempotency.key, BigInt(idempotency.liveAfter))
      if (earlier !== undefined) {
        const { requestHash, ...earlierPet } = earlier
        return { created: false, requestHash, pet: earlierPet }
      }
    }
    const { id } = insertPet.get(newPetValues(pet)) as { id: bigint }
    announce.run(BigInt(Date.now()), id, id)
    if (idempotency !== undefined) {
      insertIdempotency.run(BigInt(idempotency.apiKeyId), idempotency.key,
        idempotency.requestHash, id, BigInt(idempotency.createdAt))
    }
    return { created: true, pet: { id, ...pet } }
  }
  // Plain animals go INSERT_ROWS to a statement, their ids the last id and
  // those just below it; a row not added would shift them, so that too falls
  // back to commitEach (docs/INTERNALS.md, section "SQLite").
  const commitAll = db.transaction((group: PendingInsert[]): InsertOutcome[] => {
    const outcomes: InsertOutcome[] = new Array<InsertOutcome>(group.length)
    const plain: number[] = []
    group.forEach((pending, index) => {
      if (pending.idempotency === undefined) plain.push(index)
      else outcomes[index] = { ok: true, result: insert(pending) }
    })
    for (let start = 0; start < plain.length; start += INSERT_ROWS) {
      const chunk = plain.slice(start, start + INSERT_ROWS)
      const values: unknown[] = []
      for (const index of chunk) {
        const { pet } = group[index] as PendingInsert
        newPetValues(pet, values)
      }
      const { changes, lastInsertRowid } = insertRows.for(chunk.length).run(values)
      if (changes !== chunk.length) throw new Error(`an INSERT of ${chunk.length} animals added ${changes}`)
      const first = BigInt(lastInsertRowid) - BigInt(chunk.length - 1)
      announce.run(BigInt(Date.now()), first, BigInt(lastInsertRowid))
      chunk.forEach((index, i) => {
        const { pet } = group[index] as PendingInsert
        outcomes[index] = { ok: true, result: { created: true, pet: { id: first + BigInt(i), ...pet } } }
      })
    }
    return outcomes
  })
  // Called inside commitEach's transaction, a better-sqlite3 transaction
  // function runs in a savepoint: if it throws, its rows (the animal and
  // its idempotency record) are rolled back and the group goes on.
  // https://github.com/WiseLibs/better-sqlite3/blob/master/docs/api.md#transactionfunction---function
  const insertOne = db.transaction(insert)
  const commitEach = db.transaction((group: PendingInsert[]): InsertOutcome[] =>
    group.map((insert, index) => {
      try {
        return { ok: true, result: insertOne(insert) }
      } catch (error) {
        // An unavailable database fails (or retries) the whole group.
        if (isUnavailable(error)) throw error
        // After some errors (RAISE(ROLLBACK), out of memory) SQLite has
        // rolled back the whole transaction itself: the inserts before
        // this one are gone, and any after it would commit on their own.
        // https://www.sqlite.org/lang_transaction.html#response_to_errors_within_a_transaction
        if (!db.inTransaction) throw new GroupRolledBack(index, error)
        return { ok: false, error }
      }
    }))
  return {
    commitAll: (group) => commitAll.immediate(group),
    commitEach: (group) => commitEach.immediate(group)
  }
}
