// The pets table's columns, derived from the Pet schema (schemas/pet.ts): a
// field's column is its name in snake_case, its kind the schema's type. Both
// backends' SQL for animals is written from this list once, when loaded
// (docs/DEVELOPING.md: Adding a field to the animal).
import { NewPet, Pet } from '../schemas/pet.js'
import type { NewPetRecord } from './storage.js'

type PetField = keyof Pet

export interface PetColumn {
  field: PetField
  column: string
  /** How both backends and copy-store treat it: an int is int8, read as bigint. */
  kind: 'int' | 'text'
}

function kindOf (field: PetField): PetColumn['kind'] {
  const { type } = Pet.properties[field] as { type?: unknown }
  if (type === 'integer') return 'int'
  if (type === 'string') return 'text'
  // A nullable or composite field needs its own JSON and column handling here first.
  throw new Error(`the Pet field ${field} is neither an integer nor a string: its column kind is not known`)
}

/** Every column, in the order of the schema's fields: the order the API writes a Pet's keys in. */
export const PET_COLUMNS: readonly PetColumn[] = (Object.keys(Pet.properties) as PetField[]).map((field) => ({
  field,
  column: field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
  kind: kindOf(field)
}))

/** `id, name, category_id, status`: every column, as named in the table. */
export const PET_COLUMN_LIST = PET_COLUMNS.map(({ column }) => column).join(', ')

/** A new animal's columns: every one but the id, which the database assigns. */
export const NEW_PET_COLUMNS: readonly PetColumn[] = PET_COLUMNS.filter(({ field }) => field !== 'id')

const newFields = NEW_PET_COLUMNS.map(({ field }) => field).join(', ')
const sentFields = Object.keys(NewPet.properties).join(', ')
if (newFields !== sentFields) {
  // Checked once, when loaded: a new animal is stored as sent, field for field.
  throw new Error(`NewPet's fields (${sentFields}) are not Pet's but the id (${newFields})`)
}

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
