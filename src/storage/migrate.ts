import type { Database } from './database.ts'
import type { Logger } from '../log.ts'

export interface Migration {
  version: number
  name: string
  /** Portable SQL (SQLite and PostgreSQL), statements separated by `;` at the end of a line. */
  sql: string
}

// Any fixed number; it only has to be the same in every process of the service.
const MIGRATION_LOCK_KEY = 7_302_114

export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean)
}

/**
 * Applies, in order, every migration whose version is not recorded yet, each in its own
 * transaction. On PostgreSQL an advisory lock makes concurrent starts wait for one another.
 * Returns the versions applied by this call.
 */
export async function migrate(db: Database, migrations: readonly Migration[], log?: Logger): Promise<number[]> {
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]!.version === sorted[i - 1]!.version) throw new Error(`duplicate migration version ${sorted[i]!.version}`)

  // Under the lock too: two PostgreSQL sessions running CREATE TABLE IF NOT EXISTS at once can both try to create it.
  await db.sql.begin(async (tx) => {
    if (db.dialect === 'postgres') await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at BIGINT NOT NULL
    )`
  })

  // A recorded version stays recorded, so one read spares a start the locked transaction of each applied migration.
  const recorded = new Set((await db.sql`SELECT version FROM schema_migrations`).map((row: { version: unknown }) => Number(row.version)))
  const applied: number[] = []
  for (const migration of sorted) {
    if (recorded.has(migration.version)) continue
    await db.sql.begin(async (tx) => {
      if (db.dialect === 'postgres') await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
      const [done] = await tx`SELECT version FROM schema_migrations WHERE version = ${migration.version}`
      if (done) return
      for (const statement of splitStatements(migration.sql)) await tx.unsafe(statement)
      await tx`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${migration.version}, ${migration.name}, ${Date.now()})`
      applied.push(migration.version)
      log?.info('migration applied', { version: migration.version, name: migration.name })
    })
  }
  return applied
}
