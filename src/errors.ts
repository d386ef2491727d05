/**
 * One error model for the whole API: every failure is answered as RFC 9457
 * `application/problem+json` with a stable `code` and the request id.
 */

/** Every error code the API answers, with its HTTP status and a short title. */
export const errorCodes = {
  invalid_json: { status: 400, title: 'Malformed JSON body' },
  bad_request: { status: 400, title: 'Bad request' },
  invalid_signature: { status: 400, title: 'Webhook signature missing, malformed, wrong or outside the time tolerance' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  invalid_token: { status: 401, title: 'Invalid or expired token' },
  invalid_credentials: { status: 401, title: 'Wrong email or password' },
  insufficient_scope: { status: 403, title: 'Token lacks the required scope' },
  forbidden: { status: 403, title: 'Not allowed' },
  plan_required: { status: 403, title: 'Plan does not include this feature' },
  registration_disabled: { status: 403, title: 'Registration is disabled' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  no_customer: { status: 409, title: 'The organisation has no billing customer yet' },
  already_subscribed: { status: 409, title: 'The organisation already has a paid subscription' },
  payload_too_large: { status: 413, title: 'Request body too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  validation_failed: { status: 422, title: 'Request did not match the schema' },
  account_locked: { status: 429, title: 'Too many failed attempts' },
  rate_limited: { status: 429, title: 'Rate limit exceeded' },
  internal_error: { status: 500, title: 'Internal server error' },
  upstream_error: { status: 502, title: 'Upstream service failed' },
  not_configured: { status: 503, title: 'Feature not configured' },
  unavailable: { status: 503, title: 'Service unavailable' },
  upstream_timeout: { status: 504, title: 'Upstream service timed out' },
} as const satisfies Record<string, { status: number; title: string }>

export type ErrorCode = keyof typeof errorCodes

export interface FieldProblem {
  /** JSON path of the offending field, dotted (`messages.0.role`), or `body` for the whole body. */
  field: string
  message: string
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  code: ErrorCode
  detail: string
  requestId: string
  errors?: FieldProblem[]
  [extension: string]: unknown
}

export class AppError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: {
      errors?: FieldProblem[]
      headers?: Record<string, string>
      /** Extra members merged into the problem body (for example `allowed` values). */
      extensions?: Record<string, unknown>
      cause?: unknown
    } = {},
  ) {
    super(message, { cause: options.cause })
    this.name = 'AppError'
    this.status = errorCodes[code].status
  }
}

export function problemBody(error: AppError, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: `/docs/errors#${error.code}`,
    title: errorCodes[error.code].title,
    status: error.status,
    code: error.code,
    detail: error.message,
    requestId,
    ...error.options.extensions,
  }
  if (error.options.errors?.length) body.errors = error.options.errors
  return body
}

export function problemResponse(error: AppError, requestId: string): Response {
  return new Response(JSON.stringify(problemBody(error, requestId)), {
    status: error.status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': requestId, ...error.options.headers },
  })
}
