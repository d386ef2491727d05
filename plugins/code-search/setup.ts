import { join } from 'node:path'
import type { ModelProvider } from '../../src/llm/provider.ts'
import type { Logger } from '../../src/log.ts'
import type { RedisManager } from '../../src/redis.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { Database } from '../../src/storage/database.ts'
import { createEmbeddings } from './embeddings/index.ts'
import { createQueryExpander } from './expansion.ts'
import { createFileSnapshotStore } from './index/index.ts'
import { createCodeIndex } from './service.ts'
import type { CodeSearchSettings } from './settings.ts'

/**
 * The code index as configuration describes it: snapshots in DATA_DIR/code-index, versions in `db`, questions
 * also written as code by `modelProvider` when CODE_SEARCH_EXPANSION_MODEL is set; with `redis`, one owner process
 * per organisation's index, searches forwarded to it (signed with `secret`, shared by every process).
 */
export function codeIndexFromConfig(
  config: {
    readonly dataDir: string
    // Memory budget and advertised address optional: one process with no budget when left out.
    readonly codeSearch: Omit<CodeSearchSettings, 'memoryBudgetBytes' | 'advertiseUrl' | 'loadWaitMs'> & Partial<CodeSearchSettings>
  },
  {
    db,
    logger,
    modelProvider,
    meter,
    redis,
    secret,
  }: { db: Database; logger: Logger; modelProvider?: ModelProvider; meter?: Pick<UsageMeter, 'record'>; redis?: RedisManager; secret?: string },
) {
  const { expansion } = config.codeSearch
  return createCodeIndex({
    expandQuery:
      expansion && modelProvider
        ? createQueryExpander({ provider: modelProvider, ...expansion, meter, logger: logger.child({ component: 'code-search' }) })
        : undefined,
    embeddings: createEmbeddings(config.codeSearch.embeddings),
    snapshots: createFileSnapshotStore({ db, dir: join(config.dataDir, 'code-index') }),
    logger: logger.child({ component: 'code-index' }),
    snapshotDelayMs: config.codeSearch.snapshotDelayMs,
    refreshIntervalMs: config.codeSearch.refreshMs,
    loadWaitMs: config.codeSearch.loadWaitMs,
    memoryBudgetBytes: config.codeSearch.memoryBudgetBytes,
    cluster: redis && secret ? { redis, secret, advertiseUrl: config.codeSearch.advertiseUrl } : undefined,
  })
}
