import { SQL } from 'bun'
import { join } from 'node:path'

/**
 * A row as Bun's SQL client answers it, typed by no schema: each store's mapper reads its fields and converts them
 * (a PostgreSQL BIGINT arrives as a string, a SQLite boolean as 0 or 1) into the store's own type.
 */
// biome-ignore lint/suspicious/noExplicitAny: the one untyped boundary, narrowed by the mappers that take it
export type SqlRow = Record<string, any>

/** The data-access layer: one Bun SQL client over SQLite (embedded) or PostgreSQL. */
export interface Database {
  readonly dialect: 'sqlite' | 'postgres'
  readonly sql: SQL
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** PostgreSQL URL; when absent, SQLite at `sqliteFile`. */
  databaseUrl?: string
  /** SQLite file; `:memory:` for a throwaway database. Default `<dataDir>/service.db`. */
  sqliteFile?: string
  dataDir?: string
  /** PostgreSQL pool size. Default 10. */
  maxConnections?: number
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    // A server that drops packets instead of refusing fails a request after 5 s (503 unavailable), not Bun's 30.
    const sql = new SQL(options.databaseUrl, { max: options.maxConnections ?? 10, idleTimeout: 30, connectionTimeout: 5 })
    const db = wrap('postgres', sql)
    await db.ping()
    return db
  }
  const filename = options.sqliteFile ?? join(options.dataDir ?? '.', 'service.db')
  const sql = new SQL({ adapter: 'sqlite', filename })
  // WAL lets readers proceed during a write; busy_timeout waits out a concurrent writer instead of failing.
  if (filename !== ':memory:') await sql`PRAGMA journal_mode = WAL`
  await sql`PRAGMA busy_timeout = 5000`
  await sql`PRAGMA foreign_keys = ON`
  await sql`PRAGMA synchronous = NORMAL`
  // Pages read through a memory map rather than a read() each: a fifth off a chat's statements (256 MiB of address space, not memory).
  if (filename !== ':memory:') await sql`PRAGMA mmap_size = 268435456`
  return wrap('sqlite', sql)
}

function wrap(dialect: Database['dialect'], sql: SQL): Database {
  let closed = false
  return {
    dialect,
    sql,
    async ping() {
      await sql`SELECT 1 AS ok`
    },
    async close() {
      if (closed) return
      closed = true
      await sql.close()
    },
  }
}

/** BIGINT columns come back as strings from PostgreSQL and numbers from SQLite. */
export function toNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value)
}

export function toNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : toNumber(value)
}
