/**
 * The code index: one index per organisation, fed by repository import and searched by the route, the
 * chat's code_search tool, the agents and the MCP server (see types.ts for the contract), with several processes in
 * the one that owns the organisation's index (ownership.ts, forwarding.ts). Composed of each organisation's index
 * through its life (index/lifecycle.ts), indexing (indexing/) and search (search/, ranking by search/ranking.ts),
 * which share the count of searches under way: indexing waits for them.
 */
import type { Logger } from '../../src/log.ts'
import type { RedisManager } from '../../src/redis.ts'
import { InProgress } from '../../src/time-slices.ts'
import type { EmbeddingProvider } from './embeddings/index.ts'
import type { QueryExpander } from './expansion.ts'
import { createSearchForwarding } from './forwarding.ts'
import { IndexLifecycle, type SnapshotStore } from './index/index.ts'
import { indexedCommit, indexFiles, removeRepository, type ChunkerOptions, type IndexingOptions } from './indexing/index.ts'
import { createIndexOwnership } from './ownership.ts'
import { createSearch, normaliseQuery } from './search/index.ts'
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
  /** How long readiness waits for a snapshot being loaded. Default 150 (CODE_INDEX_LOAD_WAIT_MS): with the hop to an owner that died, a search is answered within about 200 ms. */
  loadWaitMs?: number
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
  /**
   * Bytes of indexes kept in this process (each counted as its snapshot plus unsaved changes); beyond it the least
   * recently used are dropped, saved first. Default 0: no limit (CODE_INDEX_MEMORY_BUDGET_MB).
   */
  memoryBudgetBytes?: number
  /**
   * With several processes: one owner per organisation's index (a Redis lease), searches forwarded to it, and
   * each committed snapshot announced so the processes holding the index adopt it at once.
   */
  cluster?: {
    redis: RedisManager
    /** Signs forwarded searches; the same in every process (JWT_SECRET). */
    secret: string
    /** The lease's life without renewal. Default 10 000 ms. */
    leaseMs?: number
    /** The base URL other processes reach this one at; default where it listens (CODE_SEARCH_ADVERTISE_URL). */
    advertiseUrl?: string
  }
}

/** Where each process announces the snapshot versions it commits: `<version> <orgId>`. */
const COMMITTED_CHANNEL = 'code-index:committed'

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent }

export function createCodeIndex(options: CodeIndexOptions): CodeIndex {
  const { embeddings, snapshots } = options
  const logger = options.logger ?? silent
  const now = options.now ?? Date.now
  const { cluster } = options
  const ownership = cluster && createIndexOwnership({ redis: cluster.redis, logger, leaseMs: cluster.leaseMs })
  const lifecycle = new IndexLifecycle({
    embeddings,
    snapshots,
    logger,
    now,
    snapshotDelayMs: options.snapshotDelayMs ?? 2000,
    refreshIntervalMs: options.refreshIntervalMs ?? 2000,
    compactAfterBytes: options.compactAfterBytes ?? COMPACT_AFTER_BYTES,
    memoryBudgetBytes: options.memoryBudgetBytes ?? 0,
    // Missed announcements (Redis down) are made up for by the periodic check before a search.
    onCommitted: cluster && ((orgId, version) => void cluster.redis.send('PUBLISH', [COMMITTED_CHANNEL, `${version} ${orgId}`]).catch(() => undefined)),
    onEvicted: ownership && ((orgId) => void ownership.release(orgId)),
  })
  const announcements = cluster?.redis.subscribe(COMMITTED_CHANNEL, (message) => {
    const space = message.indexOf(' ')
    const version = Number(message.slice(0, space))
    const orgId = message.slice(space + 1)
    if (space > 0 && Number.isSafeInteger(version)) void lifecycle.committedElsewhere(orgId, version).catch(() => undefined)
  })
  announcements?.subscribed.catch((err) => logger.warn('code index announcements: not subscribed yet; the connection manager retries', { err }))
  // A lease lost while this process was unreachable: the new owner serves the index, so the copy here goes.
  ownership?.onLost((orgId) => void lifecycle.drop(orgId))
  const forwarding = ownership && createSearchForwarding({ ownership, secret: cluster.secret, logger, advertiseUrl: cluster.advertiseUrl })
  /** Changes the index while it is kept from being dropped; the process changing it owns it unless another does. */
  const changing = async <T>(orgId: string, work: () => Promise<T>) => {
    if (!ownership) return lifecycle.holding(orgId, work)
    void ownership.claim(orgId).catch(() => false)
    const result = await lifecycle.holding(orgId, work)
    // Saved and announced: the owner serves it from here on, so no copy stays here.
    const place = await ownership.locate(orgId).catch(() => ({ here: true }) as const)
    if (!place.here && (await lifecycle.drop(orgId))) logger.info('code index left to its owner', { orgId, owner: place.url })
    return result
  }
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

  const loadWaitMs = options.loadWaitMs ?? 150
  // Searches made in a process (chat, the agents, MCP, another process's scoped search) are not kept waiting for a
  // large snapshot's load either: past the wait they fail as retryable, where the route answers partial.
  const searchHere = createSearch({
    embeddings,
    lifecycle,
    logger,
    searchSliceMs: options.searchSliceMs ?? SEARCH_SLICE_MS,
    expandQuery: options.expandQuery,
    searches,
    loadWaitMs,
  })

  return {
    indexFiles: (input) => changing(input.orgId, () => indexFiles(indexing, input)),
    removeRepository: (orgId, repositoryId) => changing(orgId, () => removeRepository(indexing, orgId, repositoryId)),
    async removeOrganisation(orgId) {
      await lifecycle.removeOrganisation(orgId)
      await ownership?.release(orgId)
    },
    indexedCommit: (orgId, repositoryId) => indexedCommit(indexing, orgId, repositoryId),
    meaningLearnt: (orgId) => lifecycle.meaningLearnt(orgId),
    readiness: (orgId) => lifecycle.readiness(orgId, loadWaitMs),
    async search(scope, query) {
      if (forwarding) {
        // A query refused here never makes the hop; the owner is sent only what its schema takes.
        const { text } = normaliseQuery(query)
        const { repositoryIds, languages, pathPrefix, mode, limit, expand } = query
        const results = await forwarding.search(
          { orgId: scope.orgId, userId: scope.userId },
          { query: text, repositoryIds, languages, pathPrefix, mode, limit, expand },
        )
        if (results) return results
      }
      return searchHere(scope, query)
    },
    searchHere,
    forwarding,
    async close() {
      announcements?.unsubscribe()
      await lifecycle.close()
      await ownership?.close()
    },
  }
}
