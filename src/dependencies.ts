import type { Config } from './config.ts'
import { createLogger, type Logger } from './log.ts'
import { openDatabase, type Database } from './storage/database.ts'
import { migrate } from './storage/migrate.ts'
import { migrations } from './storage/migrations/index.ts'

/** Process state shared by the health checks and shutdown. */
export interface Lifecycle {
  /** Set on SIGTERM: readiness fails so load balancers stop sending traffic. */
  draining: boolean
  readonly startedAt: number
}

/** Everything the plugins are built from. Tests build their own with fakes. */
export interface Dependencies {
  readonly config: Config
  readonly logger: Logger
  readonly db: Database
  readonly lifecycle: Lifecycle
  close(): Promise<void>
}

export interface DependencyOverrides {
  logger?: Logger
  /** SQLite file to use instead of DATA_DIR/service.db (`:memory:` in tests). */
  sqliteFile?: string
}

export async function buildDependencies(config: Config, overrides: DependencyOverrides = {}): Promise<Dependencies> {
  const logger = overrides.logger ?? createLogger(config.log)
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, sqliteFile: overrides.sqliteFile })
  await migrate(db, migrations, logger)
  const closers: (() => Promise<void>)[] = [() => db.close()]
  return {
    config,
    logger,
    db,
    lifecycle: { draining: false, startedAt: Date.now() },
    async close() {
      for (const close of closers.reverse()) await close().catch((err) => logger.warn('close failed', { err }))
    },
  }
}
