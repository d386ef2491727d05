/**
 * One error model for the whole API: every failure is answered as RFC 9457
 * `application/problem+json` with a stable `code` and the request id.
 */

/** Every error code the API answers, with its HTTP status and a short title. */
export const errorCodes = {
  invalid_json: { status: 400, title: 'Malformed JSON body' },
  nesting_too_deep: { status: 400, title: 'JSON body nested deeper than the service reads' },
  bad_request: { status: 400, title: 'Bad request' },
  upgrade_required: { status: 426, title: 'This endpoint is a WebSocket; send Upgrade: websocket' },
  invalid_signature: { status: 400, title: 'Webhook signature missing, malformed, wrong or outside the time tolerance' },
  repository_url_refused: { status: 400, title: 'Repository URL refused before connecting' },
  mcp_server_url_refused: { status: 400, title: 'MCP server URL refused before connecting' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  invalid_token: { status: 401, title: 'Invalid or expired token' },
  invalid_credentials: { status: 401, title: 'Wrong email or password' },
  insufficient_scope: { status: 403, title: 'Token lacks the required scope' },
  forbidden: { status: 403, title: 'Not allowed' },
  plan_required: { status: 403, title: 'Plan does not include this feature' },
  registration_disabled: { status: 403, title: 'Registration is disabled' },
  invalid_setup_code: { status: 403, title: 'Setup code wrong, already used or expired' },
  session_required: { status: 403, title: 'This route needs a signed-in session, not an API key' },
  wrong_password: { status: 403, title: 'The current password is wrong' },
  invalid_reset_token: { status: 403, title: 'Password reset link wrong, already used or expired' },
  repository_access_denied: { status: 403, title: 'The Git server refused access to the repository' },
  codehost_forbidden: { status: 403, title: 'The code host refused the connected account' },
  not_found: { status: 404, title: 'Not found' },
  repository_not_found: { status: 404, title: 'Repository or ref not found on the Git server' },
  setup_done: { status: 410, title: 'Setup is complete: the first owner exists' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  not_acceptable: { status: 406, title: 'None of the accepted media types can be answered' },
  conflict: { status: 409, title: 'Conflict' },
  import_not_ready: { status: 409, title: 'The import has not succeeded, so it has no files to read' },
  import_in_progress: { status: 409, title: 'An import of this repository is already running' },
  no_customer: { status: 409, title: 'The organisation has no billing customer yet' },
  already_subscribed: { status: 409, title: 'The organisation already has a paid subscription' },
  codehost_not_connected: { status: 409, title: 'No usable code-hosting connection' },
  push_rejected: { status: 409, title: 'The code host did not take the push' },
  branch_exists: { status: 409, title: 'The repository has that branch already' },
  last_owner: { status: 409, title: "The organisation's last owner cannot be deleted alone" },
  subscription_active: { status: 409, title: 'The organisation has a subscription that renews' },
  quota_exceeded: { status: 409, title: "The organisation's files would exceed FILES_ORG_QUOTA_BYTES" },
  payload_too_large: { status: 413, title: 'Request body too large' },
  uri_too_long: { status: 414, title: 'Request target too long' },
  site_too_large: { status: 413, title: 'Site exceeds PUBLISH_MAX_FILES or PUBLISH_MAX_SITE_BYTES' },
  file_too_large: { status: 413, title: 'File exceeds FILES_MAX_BYTES' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  unsupported_file_type: { status: 415, title: 'The file is not an accepted type' },
  validation_failed: { status: 422, title: 'Request did not match the schema' },
  invalid_site: { status: 422, title: 'Site files cannot be published as given' },
  repository_too_large: { status: 422, title: 'Repository exceeds IMPORT_MAX_REPOSITORY_BYTES' },
  repository_too_many_files: { status: 422, title: 'Repository exceeds IMPORT_MAX_FILES' },
  repository_file_too_large: { status: 422, title: 'A file exceeds IMPORT_MAX_FILE_BYTES' },
  repository_unsafe_path: { status: 422, title: 'Repository holds a path that would leave its workspace' },
  repository_empty: { status: 422, title: 'Repository has no commits' },
  account_locked: { status: 429, title: 'Too many failed attempts' },
  too_many_connections: { status: 429, title: 'Too many agent WebSocket connections for this user' },
  rate_limited: { status: 429, title: 'Rate limit exceeded' },
  headers_too_large: { status: 431, title: 'Request headers too large' },
  internal_error: { status: 500, title: 'Internal server error' },
  upstream_error: { status: 502, title: 'Upstream service failed' },
  mcp_probe_failed: { status: 502, title: 'The MCP server did not answer initialize and tools/list' },
  not_configured: { status: 503, title: 'Feature not configured' },
  unavailable: { status: 503, title: 'Service unavailable' },
  import_interrupted: { status: 503, title: 'The import stopped when the service did' },
  upstream_timeout: { status: 504, title: 'Upstream service timed out' },
  import_timeout: { status: 504, title: 'Clone took longer than IMPORT_CLONE_TIMEOUT_SECONDS' },
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
