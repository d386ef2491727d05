/**
 * The code index: one index per organisation, fed by repository import and searched by the route, the
 * chat's code_search tool and the agents (see types.ts for the contract). Each organisation's index is loaded,
 * saved and refreshed by lifecycle.ts; an import's files are indexed by indexing.ts; chunks are ranked by ranking.ts.
 */
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { InProgress, timeSlices } from '../../src/time-slices.ts'
import type { ChunkerOptions } from './chunker.ts'
import type { EmbeddingProvider } from './embeddings/provider.ts'
import type { QueryExpander } from './expansion.ts'
import { indexFiles, type IndexingOptions } from './indexing.ts'
import { IndexLifecycle } from './lifecycle.ts'
import type { ChunkFilter } from './org-index.ts'
import { rankingSteps, toEnd } from './ranking.ts'
import type { SnapshotStore } from './persistence.ts'
import { buildSnippet, snippetTerms } from './snippet.ts'
import type { CodeIndex, CodeSearchQuery, CodeSearchResult, SearchMode } from './types.ts'
import { COMPACT_AFTER_BYTES, INDEX_SLICE_MS, PREPARE_IN_WORKER_FROM, SEARCH_SLICE_MS } from './tuning.ts'
import type { ScoredSlot } from './vectors.ts'

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
   * is chunked and embedded on a Worker thread while the event loop inserts (preparation.ts). Default 16 MiB: below
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

export const SEARCH_MODES = ['hybrid', 'text', 'vector'] as const satisfies readonly SearchMode[]
export const MAX_LIMIT = 50
export const DEFAULT_LIMIT = 10
export const MAX_QUERY_LENGTH = 500

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent }

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] })

/** Checks a query from any caller (the route's schema checks the same) and fills in the defaults. */
export function normaliseQuery(query: CodeSearchQuery) {
  const text = typeof query.query === 'string' ? query.query.trim() : ''
  if (text === '') throw invalid('query', 'must not be blank')
  if (text.length > MAX_QUERY_LENGTH) throw invalid('query', `must be at most ${MAX_QUERY_LENGTH} characters`)
  const mode = query.mode ?? 'hybrid'
  if (!SEARCH_MODES.includes(mode)) throw invalid('mode', `must be one of ${SEARCH_MODES.join(', ')}`)
  const limit = query.limit ?? DEFAULT_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw invalid('limit', `must be a whole number from 1 to ${MAX_LIMIT}`)
  if (query.expand !== undefined && typeof query.expand !== 'boolean') throw invalid('expand', 'must be true or false')
  const set = (values: readonly string[] | undefined, field: string, map = (v: string) => v) => {
    if (values === undefined || values.length === 0) return undefined
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string' || v.trim() === '')) throw invalid(field, 'must be a list of non-empty strings')
    return new Set(values.map(map))
  }
  const pathPrefix = query.pathPrefix?.replace(/^(\.\/|\/)+/, '')
  const filter: ChunkFilter = {
    repositoryIds: set(query.repositoryIds, 'repositoryIds'),
    languages: set(query.languages, 'languages', (v) => v.trim().toLowerCase()),
    pathPrefix: pathPrefix ? pathPrefix : undefined,
  }
  return { text, mode, limit, filter }
}

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
  const queryVectors = new Map<string, Float32Array>()

  async function queryVector(text: string): Promise<Float32Array> {
    let vector = queryVectors.get(text)
    if (!vector) {
      ;[vector] = (await embeddings.embed([text])) as [Float32Array]
      if (queryVectors.size >= 1000) queryVectors.delete(queryVectors.keys().next().value!)
      queryVectors.set(text, vector)
    }
    return vector
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

  return {
    indexFiles: (input) => indexFiles(indexing, input),

    async removeRepository(orgId, repositoryId) {
      const org = await lifecycle.org(orgId)
      await lifecycle.refresh(org, true)
      lifecycle.apply(org, { kind: 'removeRepository', repositoryId })
      lifecycle.learnMeaning(org)
    },

    async meaningLearnt(orgId) {
      const org = await lifecycle.org(orgId)
      while (org.learning) await org.learning
    },

    async indexedCommit(orgId, repositoryId) {
      const org = await lifecycle.org(orgId)
      await lifecycle.refresh(org, true)
      const record = org.index.repository(repositoryId)
      if (!record || record.embeddings !== embeddings.id) return undefined
      // Vectors of another length than the index's cannot be searched together with them.
      if (record.chunks > 0 && record.dimensions !== org.index.vectors?.dimensions) return undefined
      return record.commit
    },

    async search(scope, query): Promise<CodeSearchResult[]> {
      const { text, mode, limit, filter } = normaliseQuery(query)
      const org = await lifecycle.org(scope.orgId)
      // A search answers from what this process has when the database cannot say whether it is current.
      await lifecycle.refresh(org, false).catch((error) => logger.warn('code index version check failed', { orgId: scope.orgId, err: error }))
      // The model writes while the question is embedded.
      const expansion = options.expandQuery && query.expand !== false ? options.expandQuery(text, scope.userId === undefined ? undefined : { orgId: scope.orgId, userId: scope.userId }) : undefined
      const vector = mode === 'text' ? undefined : await queryVector(text)
      const code = await expansion
      const codeVector = code !== undefined && mode !== 'text' ? await queryVector(code) : undefined
      // Read after the awaits: a refresh may have swapped the index.
      const index = org.index
      // A search of a large index takes several milliseconds: other requests run between its steps rather than wait
      // for all of it, and indexing waits until it ends (SEARCH_PRIORITY_MS). Should the index change meanwhile, the
      // slots found so far may name other chunks: the ranking is done again, at once.
      const giveWay = timeSlices(options.searchSliceMs ?? SEARCH_SLICE_MS)
      const changeCount = index.changeCount
      const ranking = () => rankingSteps(index, { text, vector, code, codeVector, mode, filter, limit })
      let ranked: ScoredSlot[] | undefined
      searches.started()
      try {
        const steps = ranking()
        let step = steps.next()
        while (!step.done) {
          await giveWay()
          if (index.changeCount !== changeCount) break
          step = steps.next()
        }
        if (step.done) ranked = step.value
      } finally {
        searches.ended()
      }
      ranked ??= toEnd(ranking())
      const terms = snippetTerms(text)
      return ranked.slice(0, limit).map(({ slot, score }) => {
        const chunk = index.chunk(slot)!
        return {
          repositoryId: chunk.repositoryId,
          repositoryName: chunk.repositoryName,
          path: chunk.path,
          language: chunk.languageName || undefined,
          startLine: chunk.startLine,
          endLine: chunk.endLine,
          snippet: buildSnippet(chunk.content, terms),
          score: Math.round(score * 10_000) / 10_000,
        }
      })
    },

    close: () => lifecycle.close(),
  }
}
