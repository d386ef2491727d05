/**
 * Which storage errors mean "the database cannot be reached right now" rather than "this query is wrong".
 * The request pipeline answers the first kind `503 unavailable` with a Retry-After; everything else stays
 * what it was (a constraint or syntax error is still a 500, never a retry invitation).
 *
 * The shapes, as Bun's SQL client throws them:
 * - PostgreSQL down or unreachable: `PostgresError` with `code` `ERR_POSTGRES_CONNECTION_REFUSED`,
 *   `ERR_POSTGRES_CONNECTION_CLOSED` (a query in flight when the server died), `..._CONNECTION_FAILED` or
 *   `..._CONNECTION_TIMEOUT`; the pool opens a new connection on the next query, so service resumes by itself.
 * - PostgreSQL stopping, starting or recovering: `code` `ERR_POSTGRES_SERVER_ERROR` with the SQLSTATE in
 *   `errno`: class 57P (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now), class 08
 *   (connection exception) and 53300 (too many connections).
 * - SQLite held by another writer past busy_timeout: `SQLiteError` with `code` `SQLITE_BUSY` or `SQLITE_LOCKED`.
 */

const CONNECTION_CODES = new Set([
  'ERR_POSTGRES_CONNECTION_REFUSED',
  'ERR_POSTGRES_CONNECTION_CLOSED',
  'ERR_POSTGRES_CONNECTION_FAILED',
  'ERR_POSTGRES_CONNECTION_TIMEOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
])

const UNAVAILABLE_SQLSTATE = /^(57P0[1-4]|08...|53300)$/

/** Seconds a client is asked to wait before trying again while the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5

/** True when `error`, or an error it was caused by, says the database is unreachable or not serving. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { name, code, errno } = e as { name?: unknown; code?: unknown; errno?: unknown }
    if (name !== 'PostgresError' && name !== 'SQLiteError') continue
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true
    if (code === 'ERR_POSTGRES_SERVER_ERROR' && typeof errno === 'string' && UNAVAILABLE_SQLSTATE.test(errno)) return true
  }
  return false
}
