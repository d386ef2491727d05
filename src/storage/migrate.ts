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

/**
 * A migration that could not be applied: its transaction was rolled back, so the database is as the previous
 * migration left it. Names the step and the statement, for the operator's log.
 */
export class MigrationError extends Error {
  constructor(
    readonly version: number,
    readonly migrationName: string,
    detail: string,
  ) {
    super(`database migration ${String(version).padStart(3, '0')}_${migrationName} ${detail}`)
    this.name = 'MigrationError'
  }
}

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
  const recorded = new Set<number>((await db.sql`SELECT version FROM schema_migrations`).map((row: { version: unknown }) => Number(row.version)))
  // Versions past the newest this release has: a newer release migrated the database.
  const newest = sorted.at(-1)?.version ?? 0
  const newer = [...recorded].filter((v) => v > newest).sort((a, b) => a - b)
  if (newer.length > 0) {
    throw new MigrationError(
      newer.at(-1)!,
      'unknown',
      `is recorded in the database, but this release knows migrations up to ${newest}: the database was upgraded by a newer release. Run that release, or restore the backup taken before the upgrade (docs/upgrading.mdx)`,
    )
  }
  const applied: number[] = []
  const recordedBefore = (version: number) => Math.max(0, ...[...recorded, ...applied].filter((v) => v < version))
  for (const migration of sorted) {
    if (recorded.has(migration.version)) continue
    await db.sql.begin(async (tx) => {
      if (db.dialect === 'postgres') await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
      const [done] = await tx`SELECT version FROM schema_migrations WHERE version = ${migration.version}`
      if (done) return
      const statements = splitStatements(migration.sql)
      for (const [index, statement] of statements.entries()) {
        try {
          await tx.unsafe(statement)
        } catch (error) {
          throw new MigrationError(
            migration.version,
            migration.name,
            `failed at statement ${index + 1} of ${statements.length} (${(error as Error).message}); it was rolled back, and the database is as migration ${recordedBefore(migration.version)} left it`,
          )
        }
      }
      await tx`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${migration.version}, ${migration.name}, ${Date.now()})`
      applied.push(migration.version)
      log?.info('migration applied', { version: migration.version, name: migration.name })
    })
  }
  return applied
}
