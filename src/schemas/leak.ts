// Leaked tokens (docs/API.md: Leaked tokens): a secret scanner's report in
// GitHub's partner format and its answer, and a holder's revocation in the
// shape of GitHub's credential revocation API.
// https://docs.github.com/en/code-security/secret-scanning/secret-scanning-partnership-program/secret-scanning-partner-program
import { Type, type Static } from './typebox.js'
import { StringEnum } from './kinds.js'

/** Matches in one report, at most: GitHub sends a few at a time; a report of more is refused, not half done. */
const MAX_REPORT_MATCHES = 1000
/** Tokens one revocation may name, as GitHub's credential revocation API takes. */
const MAX_CREDENTIALS = 100
/** Longer than any token of ours by far: what is longer is no token of ours, and need not be read. */
const MAX_TOKEN_CHARS = 1000

const ScanMatch = Type.Object({
  token: Type.String({ maxLength: MAX_TOKEN_CHARS, description: 'The text that matched the token\'s pattern.' }),
  type: Type.String({ maxLength: 200, description: 'The pattern\'s name, as registered with the scanner.' }),
  url: Type.Optional(Type.String({ maxLength: 8192, description: 'Where the token was seen.' })),
  source: Type.Optional(Type.String({ maxLength: 200, description: 'Which kind of place it was seen in: `content`, `commit`, `pull_request_title`, `gist_content`, `npm`, …' }))
}, { additionalProperties: true, description: 'One match; fields the scanner adds later are ignored.' })

export const ScanReport = Type.Array(ScanMatch, {
  $id: 'ScanReport',
  title: 'ScanReport',
  minItems: 1,
  maxItems: MAX_REPORT_MATCHES,
  description: 'The matches of one report, in GitHub\'s secret scanning partner format.'
})

const LabelledMatch = Type.Object({
  token_raw: Type.String({ maxLength: MAX_TOKEN_CHARS, description: 'The token as reported.' }),
  token_type: Type.String({ maxLength: 200, description: 'Its `type` as reported.' }),
  label: StringEnum(['true_positive', 'false_positive'] as const, {
    description: '`true_positive`: a token this service issued (its key, if still live, is now revoked); `false_positive`: no key was ever given it.'
  })
}, { additionalProperties: false })

export const ScanLabels = Type.Array(LabelledMatch, {
  $id: 'ScanLabels',
  title: 'ScanLabels',
  maxItems: MAX_REPORT_MATCHES,
  description: 'Each match of the report, in its order, labelled.'
})

export const CredentialsRevocation = Type.Object({
  credentials: Type.Array(Type.String({ maxLength: MAX_TOKEN_CHARS }), {
    minItems: 1,
    maxItems: MAX_CREDENTIALS,
    description: 'The tokens to revoke, 1 to 100.'
  })
}, { $id: 'CredentialsRevocation', title: 'CredentialsRevocation', additionalProperties: false, description: 'Tokens their holder gives up.' })

export const RevocationAccepted = Type.Object({
  message: Type.String({ maxLength: 200, description: 'The same words whatever the tokens were.' })
}, { $id: 'RevocationAccepted', title: 'RevocationAccepted', additionalProperties: false, description: 'The revocation is under way.' })

// Optional here, since a report without them gets 401 `invalid_signature`
// (checked before the body is read), not a 400; longer ones are refused alike.
export const SignatureHeaders = Type.Object({
  'github-public-key-identifier': Type.Optional(Type.String({ maxLength: 200, description: 'Which of the scanner\'s keys signed the report (its `key_identifier`). Required: without it the report is refused with 401.' })),
  'github-public-key-signature': Type.Optional(Type.String({ maxLength: 200, description: 'The base64 DER ECDSA P-256 / SHA-256 signature over the body as sent. Required: without it the report is refused with 401.' }))
})

export type ScanReport = Static<typeof ScanReport>
