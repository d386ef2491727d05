/**
 * The code index: one index per organisation, fed by repository import and searched by the route, the
 * chat's code_search tool and the agents (see types.ts for the contract). Composed of each organisation's index
 * through its life (index/lifecycle.ts), indexing (indexing/) and search (search/, ranking by search/ranking.ts),
 * which share the count of searches under way: indexing waits for them.
 */
import type { Logger } from '../../src/log.ts'
import { InProgress } from '../../src/time-slices.ts'
import type { EmbeddingProvider } from './embeddings/index.ts'
import type { QueryExpander } from './expansion.ts'
import { IndexLifecycle, type SnapshotStore } from './index/index.ts'
import { indexedCommit, indexFiles, removeRepository, type ChunkerOptions, type IndexingOptions } from './indexing/index.ts'
import { createSearch } from './search/index.ts'
import type { CodeIndex } from './types.ts'
import { COMPACT_AFTER_BYTES, INDEX_SLICE_MS, PREPARE_IN_WORKER_FROM, SEARCH_SLICE_MS } from './tuning.ts'

export interface CodeIndexOptions {
  embeddings: EmbeddingProvider
  /** Where indexes are saved; without one they live in memory only. */
  snapshots?: SnapshotStore
  logger?: Logger
  /** Quiet time after a change before the index is saved. Default 2000 (CODE_INDEX_SNAPSHOT_DELAY_MS). */
  snapshotDelayMs?: number
  /** How often a search checks the database for a newer snapshot. Default 2000 (CODE_INDEX_REFRESH_MS); 0 checks every time. */
  refreshIntervalMs?: number
  /** Chunks embedded per call. Default 64. */
  embedBatchSize?: number
  /**
   * Segments appended to an organisation's snapshot since its base, in bytes, beyond which a Worker
   * rewrites it as one base (also when they outweigh half the base). Default 8 MiB.
   */
  compactAfterBytes?: number
  /**
   * With offline embeddings, an indexFiles call whose files total at least this many bytes (IndexFilesInput.totalBytes)
   * is chunked and embedded on a Worker thread while the event loop inserts (indexing/preparation.ts). Default 16 MiB: below
   * that, copying to and from the Worker costs about what it saves. 0 always, Infinity never.
   */
  prepareInWorkerFrom?: number
  /** Milliseconds a search runs before other work may run between its steps. Default 3; 0 gives way at every step. */
  searchSliceMs?: number
  /** Milliseconds of indexing between two turns of the event loop. Default 4; 0 gives way after every file. */
  indexSliceMs?: number
  chunker?: ChunkerOptions
  now?: () => number
  /** Writes code a question describes, searched beside the question (CODE_SEARCH_EXPANSION_MODEL); see expansion.ts. */
  expandQuery?: QueryExpander
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent }

export function createCodeIndex(options: CodeIndexOptions): CodeIndex {
  const { embeddings, snapshots } = options
  const logger = options.logger ?? silent
  const now = options.now ?? Date.now
  const lifecycle = new IndexLifecycle({
    embeddings,
    snapshots,
    logger,
    now,
    snapshotDelayMs: options.snapshotDelayMs ?? 2000,
    refreshIntervalMs: options.refreshIntervalMs ?? 2000,
    compactAfterBytes: options.compactAfterBytes ?? COMPACT_AFTER_BYTES,
  })
  const searches = new InProgress()
  const indexing: IndexingOptions = {
    embeddings,
    lifecycle,
    logger,
    embedBatchSize: options.embedBatchSize ?? 64,
    prepareInWorkerFrom: embeddings.hashedDimensions === undefined ? Infinity : (options.prepareInWorkerFrom ?? PREPARE_IN_WORKER_FROM),
    indexSliceMs: options.indexSliceMs ?? INDEX_SLICE_MS,
    chunker: options.chunker,
    searches,
  }

  return {
    indexFiles: (input) => indexFiles(indexing, input),
    removeRepository: (orgId, repositoryId) => removeRepository(indexing, orgId, repositoryId),
    removeOrganisation: (orgId) => lifecycle.removeOrganisation(orgId),
    indexedCommit: (orgId, repositoryId) => indexedCommit(indexing, orgId, repositoryId),
    meaningLearnt: (orgId) => lifecycle.meaningLearnt(orgId),
    search: createSearch({
      embeddings,
      lifecycle,
      logger,
      searchSliceMs: options.searchSliceMs ?? SEARCH_SLICE_MS,
      expandQuery: options.expandQuery,
      searches,
    }),
    close: () => lifecycle.close(),
  }
}
