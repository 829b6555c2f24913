import { Type, type Static } from './typebox.js'
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, PET_STATUSES } from '../domain.js'
import { INT64_MAX, Int64, Rule, StringEnum, Text } from './kinds.js'

// A schema with an `$id` is a component of the OpenAPI document, written
// once and referred to wherever it is used (plugins/openapi.ts).

export const PetStatus = StringEnum(PET_STATUSES, { $id: 'PetStatus', description: 'Availability status of an animal.' })

const PetName = Text({ maxLength: 100, description: "The animal's name: 1 to 100 characters, stored and returned exactly as sent.", examples: ['Rex'] })
const CategoryId = Int64({ minimum: 1n, maximum: INT64_MAX, description: 'Identifier of the category the animal belongs to.' })

export const NewPet = Type.Object({
  name: PetName,
  categoryId: CategoryId,
  status: Type.Optional(PetStatus)
}, { $id: 'NewPet', additionalProperties: false, title: 'NewPet', description: 'An animal to add; its `status` is `available` when omitted.' })
export type NewPet = Static<typeof NewPet>

export const Pet = Type.Object({
  id: Int64({ minimum: 1n, maximum: INT64_MAX, description: 'Unique identifier, assigned by the service on creation.' }),
  name: PetName,
  categoryId: CategoryId,
  status: PetStatus
}, { $id: 'Pet', additionalProperties: false, title: 'Pet', description: 'An animal in the store.' })
export type Pet = Static<typeof Pet>

export const Pets = Type.Array(Pet, { $id: 'Pets', maxItems: MAX_PAGE_SIZE, title: 'Pets', description: 'A page of animals, ordered by id.' })

export const ListPetsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, format: 'int32', default: DEFAULT_PAGE_SIZE, description: 'Maximum number of animals to return.' })),
  // Not PetStatus itself: a parameter's description is written beside its
  // schema, and a reference to a component carries none.
  status: Type.Optional(StringEnum(PET_STATUSES, { description: 'Returns only animals with this status.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'Where the page starts: copy it from the `Link: rel="next"` URL of the previous page.' }))
}, { additionalProperties: false })
export type ListPetsQuery = Static<typeof ListPetsQuery>

export const PetIdParams = Type.Object({
  petId: Int64({ minimum: 1n, maximum: INT64_MAX, description: 'Identifier of the animal to retrieve.' })
}, { additionalProperties: false })
export type PetIdParams = Static<typeof PetIdParams>

export const CreatePetHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 257,
    pattern: '^[\\x20-\\x7E]+$',
    [Rule]: 'must be 1 to 255 printable ASCII characters',
    description: 'Makes a retried request safe: within 24 hours, the same key with the same body returns the first response again and adds nothing. 1 to 255 printable ASCII characters, optionally in double quotes.'
  }))
})
