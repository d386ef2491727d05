/**
 * A search: the query checked, the question embedded while a model writes code for it, the chunks ranked in steps
 * that let other work run between them (ranking.ts), and the best answered with their snippets.
 */
import { AppError } from '../../../src/errors.ts'
import type { Logger } from '../../../src/log.ts'
import { type InProgress, timeSlices } from '../../../src/time-slices.ts'
import type { EmbeddingProvider } from '../embeddings/index.ts'
import type { QueryExpander } from '../expansion.ts'
import type { ChunkFilter, IndexLifecycle, OrgIndex } from '../index/index.ts'
import type { CodeIndex, CodeSearchQuery, CodeSearchResult, SearchMode } from '../types.ts'
import type { ScoredSlot } from '../vectors/index.ts'
import { rankingSteps, type RankingQuery } from './ranking.ts'
import { buildSnippet, snippetTerms } from './snippet.ts'

export const SEARCH_MODES = ['hybrid', 'text', 'vector'] as const satisfies readonly SearchMode[]
export const MAX_LIMIT = 50
export const DEFAULT_LIMIT = 10
export const MAX_QUERY_LENGTH = 500

export interface SearchOptions {
  embeddings: EmbeddingProvider
  lifecycle: IndexLifecycle
  logger: Logger
  /** Milliseconds a search runs before other work may run between its steps; 0 gives way at every step. */
  searchSliceMs: number
  /** Writes code a question describes, searched beside the question. */
  expandQuery: QueryExpander | undefined
  /** Searches under way, counted so indexing waits for them. */
  searches: InProgress
  /**
   * How long a search waits for its organisation's snapshot being loaded on the Worker before it fails as retryable
   * (503 unavailable, Retry-After: 1) rather than waiting for the whole load.
   */
  loadWaitMs: number
}

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

/** CodeIndex.search over the lifecycle's indexes. */
export function createSearch(options: SearchOptions): CodeIndex['search'] {
  const { lifecycle, logger, expandQuery } = options
  const queryVector = queryVectors(options.embeddings)
  return async (scope, query) => {
    const { text, mode, limit, filter } = normaliseQuery(query)
    if ((await lifecycle.readiness(scope.orgId, options.loadWaitMs)) === 'loading')
      throw new AppError('unavailable', "The organisation's code index is still loading from its snapshot; search again in a moment", {
        headers: { 'retry-after': '1' },
      })
    const org = await lifecycle.org(scope.orgId)
    // A search answers from what this process has when the database cannot say whether it is current.
    await lifecycle.refresh(org, false).catch((error) => logger.warn('code index version check failed', { orgId: scope.orgId, err: error }))
    // The model writes while the question is embedded.
    const expansion =
      expandQuery && query.expand !== false
        ? expandQuery(text, scope.userId === undefined ? undefined : { orgId: scope.orgId, userId: scope.userId })
        : undefined
    const vector = mode === 'text' ? undefined : await queryVector(text)
    const code = await expansion
    const codeVector = code !== undefined && mode !== 'text' ? await queryVector(code) : undefined
    // Read after the awaits: a refresh may have swapped the index.
    const index = org.index
    const ranked = await rankGivingWay(index, { text, vector, code, codeVector, mode, filter, limit }, options)
    return answer(index, ranked.slice(0, limit), text)
  }
}

/** The embeddings of the last 1,000 texts searched. */
function queryVectors(embeddings: EmbeddingProvider): (text: string) => Promise<Float32Array> {
  const vectors = new Map<string, Float32Array>()
  return async (text) => {
    let vector = vectors.get(text)
    if (!vector) {
      ;[vector] = (await embeddings.embed([text])) as [Float32Array]
      if (vectors.size >= 1000) vectors.delete(vectors.keys().next().value!)
      vectors.set(text, vector)
    }
    return vector
  }
}

/**
 * A search of a large index takes several milliseconds: other requests run between its steps rather than wait for
 * all of it, and indexing waits until it ends (SEARCH_PRIORITY_MS). Should the index change meanwhile, the chunks
 * stored or removed since its first step are left out of its answer (rankingSteps), rather than the whole ranking
 * being done again in one turn: an import or a removal changes the index between nearly every step.
 */
async function rankGivingWay(index: OrgIndex, query: RankingQuery, options: SearchOptions): Promise<ScoredSlot[]> {
  const { searches } = options
  const giveWay = timeSlices(options.searchSliceMs)
  searches.started()
  try {
    const steps = rankingSteps(index, query)
    for (let step = steps.next(); ; step = steps.next()) {
      if (step.done) return step.value
      await giveWay()
    }
  } finally {
    searches.ended()
  }
}

/** The ranked chunks as results, each with a snippet where the question's words meet. */
function answer(index: OrgIndex, ranked: ScoredSlot[], text: string): CodeSearchResult[] {
  const terms = snippetTerms(text)
  return ranked.map(({ slot, score }) => {
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
}
