import { join } from 'node:path'
import type { Logger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import { createEmbeddings } from './embeddings/index.ts'
import { createFileSnapshotStore } from './persistence.ts'
import { createCodeIndex } from './service.ts'
import type { CodeSearchSettings } from './settings.ts'

/** The code index as configuration describes it: snapshots in DATA_DIR/code-index, versions in `db`. */
export function codeIndexFromConfig(config: { readonly dataDir: string; readonly codeSearch: CodeSearchSettings }, { db, logger }: { db: Database; logger: Logger }) {
  return createCodeIndex({
    embeddings: createEmbeddings(config.codeSearch.embeddings),
    snapshots: createFileSnapshotStore({ db, dir: join(config.dataDir, 'code-index') }),
    logger: logger.child({ component: 'code-index' }),
    snapshotDelayMs: config.codeSearch.snapshotDelayMs,
    refreshIntervalMs: config.codeSearch.refreshMs,
  })
}
