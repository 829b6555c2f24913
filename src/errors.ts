// The catalogue of error codes: each code has one HTTP status, here and
// nowhere else. Handlers throw `new ApiError(code, message)`; the error
// handler turns it into the Error body.

export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_key_in_use: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  request_header_fields_too_large: 431,
  rate_limited: 429,
  api_key_banned: 429,
  internal_error: 500,
  service_unavailable: 503
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface ErrorDetail {
  field: string
  reason: string
}

export class ApiError extends Error {
  override name = 'ApiError'
  readonly code: ErrorCode
  readonly status: number
  readonly details: ErrorDetail[] | undefined
  readonly headers: Record<string, string>

  constructor (code: ErrorCode, message: string, options: { details?: ErrorDetail[], headers?: Record<string, string> } = {}) {
    super(message)
    this.code = code
    this.status = ERROR_STATUS[code]
    this.details = options.details
    this.headers = options.headers ?? {}
  }
}

/** Thrown by a storage backend that cannot answer (down, or too slow). */
export class StorageUnavailableError extends Error {
  override name = 'StorageUnavailableError'
}

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
  details?: ErrorDetail[]
}

export function errorBody (error: ApiError): ErrorBody {
  const body: ErrorBody = { code: error.code, message: error.message, status: error.status }
  if (error.details !== undefined && error.details.length > 0) body.details = error.details
  return body
}

/** Cuts client input quoted back in an error, so that the error stays small. */
export function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}
