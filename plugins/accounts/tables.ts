/**
 * Every table holding a `user_id` or `org_id` column, and what deleting a user or an organisation does with its
 * rows. test/accounts/tables.test.ts compares this list with the schema the migrations build, so a new table with
 * either column fails the suite until its deletion is decided here and carried out in deletion.ts.
 */
export type RowFate =
  /** The rows go. */
  | 'deleted'
  /** The rows stay with the user id replaced by DELETED_USER; an organisation's deletion deletes them. */
  | 'anonymised'
  /** The rows stay as they are: the audit log, whose hash chain must verify (docs/accounts.mdx says why). */
  | 'kept'

export const PERSONAL_TABLES = {
  organizations: 'deleted',
  users: 'deleted',
  refresh_tokens: 'deleted',
  api_keys: 'deleted',
  chats: 'deleted',
  usage_events: 'anonymised',
  integration_connections: 'deleted',
  oauth_states: 'deleted',
  codehost_repositories: 'deleted',
  codehost_imports: 'anonymised',
  code_index_versions: 'deleted',
  billing_customers: 'deleted',
  billing_subscriptions: 'deleted',
  checkout_requests: 'deleted',
  setup_completion: 'anonymised',
  mcp_servers: 'deleted',
  mcp_connections: 'deleted',
  mcp_oauth_states: 'deleted',
  files: 'deleted',
  audit_log: 'kept',
} as const satisfies Record<string, RowFate>

/** What replaces a deleted user's id in the rows that stay: one value for everyone, so nothing links them. */
export const DELETED_USER = 'deleted-user'
