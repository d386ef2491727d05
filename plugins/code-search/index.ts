import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import { guard } from '../../src/guards.ts'
import { readBodyText } from '../../src/body.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { FORWARDED_SEARCH_PATH, SCOPED_SEARCH_PATH } from './forwarding.ts'
import { codeSearchAnswer, codeSearchBody, scopedSearchAnswer, scopedSearchBody } from './schemas.ts'
import type { CodeIndex, CodeSearchQuery } from './types.ts'
export { codeSearchSettings } from './settings.ts'

export { codeIndexFromConfig } from './setup.ts'
export { createCodeIndex, type CodeIndexOptions } from './service.ts'
export { MAX_LIMIT, MAX_QUERY_LENGTH } from './search/index.ts'
export type { CodeIndex, CodeSearchQuery, CodeSearchResult, IndexFilesInput, RepositoryFile, SearchMode } from './types.ts'
// The index's parts, for measuring it against a plain Orama baseline (bench/) and for losing a snapshot on purpose (tests).
export { chunkFile } from './indexing/index.ts'
export { createEmbeddings, createHashedEmbeddings, hashedVector } from './embeddings/index.ts'
export { createQueryExpander } from './expansion.ts'
export { createFileSnapshotStore, decodeSnapshot, orgDirName } from './index/index.ts'
export { Meaning, nearestSteps, runToEnd, VectorStore, type ScoringPart, type TermSpace, type VectorQuery } from './vectors/index.ts'
// Signs a scoped search as a process of the deployment does, for tests that send the owner's route one.
export { SCOPED_SEARCH_PATH, scopedSearchSignature } from './forwarding.ts'

export interface CodeSearchPluginOptions {
  codeIndex: CodeIndex
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** Records one `search` event per search. */
  meter?: Pick<UsageMeter, 'record'>
}

/** Clients may reuse an answer for 5 minutes, the contract's recommended cache TTL for search results. */
export const SEARCH_CACHE_SECONDS = 300
/**
 * Bytes of a scoped search's body the owner reads to check its signature: a question and its filters, far below
 * this. A longer one is refused as unsigned, and the process that made it searches its own copy.
 */
const SCOPED_SEARCH_MAX_BYTES = 1024 * 1024
/** Says why an answer is partial: the index is `loading`, or `unavailable` (its snapshot could not be read). */
export const PARTIAL_HEADER = 'x-code-search-partial'

/**
 * POST /api/search: semantic search over the organisation's imported repositories. The organisation is
 * the caller's, from the token; no field of the body can widen it. With several processes, the search is
 * answered by the process that owns the organisation's index (forwarding.ts), which authorises the caller again.
 */
export function codeSearchPlugin(options: CodeSearchPluginOptions) {
  const { codeIndex, meter } = options
  const forwarding = codeIndex.forwarding
  // Never forwarded again: the route forwards first, and what reaches the owner's routes is served there.
  const searchInProcess = (scope: { orgId: string; userId?: string }, query: CodeSearchQuery) =>
    codeIndex.searchHere ? codeIndex.searchHere(scope, query) : codeIndex.search(scope, query)
  const searchHere = async (principal: { orgId: string; userId: string }, body: typeof codeSearchBody.static, set: { headers: Record<string, unknown> }) => {
    const mode = body.mode ?? 'hybrid'
    // A snapshot still loading (a process taking over an index) answers at once rather than after the whole load.
    const readiness = (await codeIndex.readiness?.(principal.orgId)) ?? 'ready'
    if (readiness !== 'ready') {
      set.headers[PARTIAL_HEADER] = readiness
      set.headers['cache-control'] = 'no-store'
      set.headers['retry-after'] = '1'
      return { query: body.query, mode, results: [], partial: true }
    }
    const results = await searchInProcess({ orgId: principal.orgId, userId: principal.userId }, { ...body, mode })
    // private: the answer went through one user's authorisation and must not sit in a shared cache.
    set.headers['cache-control'] = `private, max-age=${SEARCH_CACHE_SECONDS}`
    return { query: body.query, mode, results }
  }
  const plugin = new Elysia({ name: 'code-search', detail: { tags: ['code search'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/search',
      async ({ body, principal, set, request }) => {
        const forwarded = await forwarding?.forward(principal.orgId, request.headers.get('authorization'), body)
        if (forwarded && !forwarded.ok) return forwarded as never
        const answer = forwarded ?? (await searchHere(principal, body, set))
        meter?.record({ orgId: principal.orgId, userId: principal.userId, kind: 'search' })
        // The owner's answer as it gave it, already checked against the same schema there.
        return answer as Awaited<ReturnType<typeof searchHere>>
      },
      {
        body: codeSearchBody,
        auth: 'search:read',
        rateLimit: 'search',
        response: { 200: codeSearchAnswer, 401: problem, 403: problem, 422: problem, 429: problem, 502: problem, 503: problem, 504: problem },
        detail: {
          summary: "Search the code of the organisation's imported repositories (hybrid full-text and vector search)",
          description:
            'Ranks chunks of imported files (a function, a class or a window of lines) by BM25 over their words and identifiers, by vector similarity, or both, their scores fused (the default). ' +
            'Filters: repositoryIds, languages, pathPrefix. Answers carry Cache-Control: private, max-age=300. ' +
            "An organisation's index whose snapshot is still loading (or could not be read) answers after at most CODE_INDEX_LOAD_WAIT_MS (150 ms) with no results, partial: true, the header X-Code-Search-Partial (loading or unavailable), Cache-Control: no-store and Retry-After: 1. " +
            'With a remote embeddings model configured, its failures are 502 upstream_error, 503 unavailable (rate limited) or 504 upstream_timeout for the hybrid and vector modes.',
        },
      },
    )
  if (!forwarding) return plugin
  // Unsigned, or signed over another body: the same 404 as a route that does not exist.
  const noSuchRoute = () => new AppError('not_found', 'No such route')
  // Before the body is parsed, so nothing about it (its size, its type, its JSON) is answered to a request a peer did
  // not sign: the stamp is checked first, then the exact bytes are read (the parser takes them from there) and the
  // signature checked over them.
  const signedByPeerOverBody = guard(async ({ request }: { request: Request }) => {
    if (!forwarding.freshlySigned(request.headers)) throw noSuchRoute()
    const text = await readBodyText(request, SCOPED_SEARCH_MAX_BYTES).catch(() => undefined)
    if (text === undefined || !forwarding.signedOver(request.headers, text)) throw noSuchRoute()
    requestMeta(request).rawBody = text
  })
  return (
    plugin
      // The owner's side of a forwarded search: the caller authorised again from its own token, never forwarded on.
      .post(
        FORWARDED_SEARCH_PATH,
        ({ body, principal, set, request }) => {
          if (!forwarding.signedByPeer(request.headers)) throw noSuchRoute()
          return searchHere(principal, body, set)
        },
        {
          body: codeSearchBody,
          auth: 'search:read',
          response: { 200: codeSearchAnswer, 401: problem, 403: problem, 404: problem, 422: problem, 502: problem, 503: problem, 504: problem },
          detail: { summary: 'A search another process of the deployment forwarded to the owner of the index', hide: true },
        },
      )
      // The owner's side of CodeIndex.search made in another process (chat, agents, MCP): no caller token, the scope
      // taken from the signed body (forwarding.ts says why that proves as much as a token). Searched as a search made
      // here is (waiting for a snapshot being loaded), never forwarded on; neither rate-limited nor metered here, as
      // whatever the process it was made in does for its searches, it did.
      .post(SCOPED_SEARCH_PATH, async ({ body }) => ({ results: await searchInProcess(body.scope, body.query) }), {
        body: scopedSearchBody,
        transform: signedByPeerOverBody.early,
        response: { 200: scopedSearchAnswer, 404: problem, 422: problem, 500: problem, 502: problem, 503: problem, 504: problem },
        detail: { summary: 'A search made by another process of the deployment, sent to the owner of the index', hide: true },
      })
  )
}
