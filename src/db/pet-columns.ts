// The pets table's columns, one for each field of the Pet schema
// (schemas/pet.ts): a field's column is its name in snake_case. Both
// backends' SQL for animals is written from this list once, when loaded
// (docs/DEVELOPING.md: Adding a field to the animal).
import type { Pet } from '../schemas/pet.js'
import type { NewPetRecord } from './storage.js'

type PetField = keyof Pet

/** How both backends and copy-store treat a field: an int is int8, read as bigint. */
type ColumnKind = 'int' | 'text'

/**
 * Each field of Pet, in the schema's order (the order the API writes a Pet's
 * keys in), with its kind. Written here rather than read from the schema, so
 * that the key commands, which open the store, load no TypeBox
 * (test/embedded-footprint.test.ts): tsc fails when a field of Pet is
 * missing or one is not Pet's, and test/db/schema-sources.test.ts holds the
 * order and the kinds to the schema.
 */
const FIELD_KINDS = {
  id: 'int',
  name: 'text',
  categoryId: 'int',
  status: 'text'
} as const satisfies Record<PetField, ColumnKind>

export interface PetColumn {
  field: PetField
  column: string
  kind: ColumnKind
}

/** Every column, in the order of the schema's fields. */
export const PET_COLUMNS: readonly PetColumn[] = (Object.entries(FIELD_KINDS) as Array<[PetField, ColumnKind]>).map(([field, kind]) => ({
  field,
  column: field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
  kind
}))

/** `id, name, category_id, status`: every column, as named in the table. */
export const PET_COLUMN_LIST = PET_COLUMNS.map(({ column }) => column).join(', ')

/** A new animal's columns: every one but the id, which the database assigns; NewPet's fields, in its order. */
export const NEW_PET_COLUMNS: readonly PetColumn[] = PET_COLUMNS.filter(({ field }) => field !== 'id')

/** `name, category_id, status`: the columns an INSERT of a new animal names. */
export const NEW_PET_COLUMN_LIST = NEW_PET_COLUMNS.map(({ column }) => column).join(', ')

/**
 * The select list of a whole animal, each column named as its field
 * (`category_id AS "categoryId"`), so that a row read is a PetRecord as it
 * is; `table` qualifies the columns in a join.
 */
export function petSelectList (table?: string): string {
  const prefix = table === undefined ? '' : `${table}.`
  return PET_COLUMNS.map(({ field, column }) => field === column ? `${prefix}${column}` : `${prefix}${column} AS "${field}"`).join(', ')
}

const NEW_FIELD_NAMES = NEW_PET_COLUMNS.map(({ field }) => field as keyof NewPetRecord)

/** Appends a new animal's values to `values`, in the order of NEW_PET_COLUMN_LIST. */
export function newPetValues (pet: NewPetRecord, values: unknown[] = []): unknown[] {
  for (const field of NEW_FIELD_NAMES) values.push(pet[field])
  return values
}
