/**
 * The contract between repository import (which feeds files in) and code search
 * (which indexes and queries them). Chat's code_search tool and the agents use `search`.
 */
import type { SearchForwarding } from './forwarding.ts'

export interface RepositoryFile {
  /** Path relative to the repository root, with forward slashes. */
  path: string
  content: string
  /** Language name as the analyser detected it (for example `TypeScript`), when known. */
  language?: string
}

export interface IndexFilesInput {
  orgId: string
  repositoryId: string
  /** Display name such as `owner/name`. */
  repositoryName: string
  /** Files to add or replace; every chunk previously indexed for these paths is dropped first. */
  files: AsyncIterable<RepositoryFile> | Iterable<RepositoryFile>
  /** The files' size in all, when known: a large import is prepared on a Worker thread (CodeIndexOptions.prepareInWorkerFrom). */
  totalBytes?: number
  /** Paths deleted since the last import. */
  removedPaths?: readonly string[]
  /**
   * The commit the repository's files are at once these changes are in: recorded in the index, which answers
   * it from indexedCommit. Without one the repository's record is left as it was.
   */
  commit?: string
  onProgress?(progress: { filesIndexed: number; chunksIndexed: number }): void
  signal?: AbortSignal
}

export type SearchMode = 'hybrid' | 'text' | 'vector'

export interface CodeSearchQuery {
  query: string
  repositoryIds?: readonly string[]
  languages?: readonly string[]
  pathPrefix?: string
  mode?: SearchMode
  limit?: number
  /** With CODE_SEARCH_EXPANSION_MODEL set, false searches the question alone. Default true. */
  expand?: boolean
}

export interface CodeSearchResult {
  repositoryId: string
  repositoryName: string
  path: string
  language: string | undefined
  startLine: number
  endLine: number
  /** Excerpt with matched terms wrapped in `<mark>` and `</mark>`. */
  snippet: string
  score: number
}

export interface CodeIndex {
  indexFiles(input: IndexFilesInput): Promise<{ files: number; chunks: number }>
  removeRepository(orgId: string, repositoryId: string): Promise<void>
  /**
   * Deletes everything the index holds for the organisation: in this process, its snapshot files and its version
   * record (an organisation's deletion). An index that keeps nothing may leave it out.
   */
  removeOrganisation?(orgId: string): Promise<void>
  /**
   * The commit whose files the index holds for the repository, as recorded by indexFiles, or undefined when
   * it holds no complete record: never indexed, removed, a snapshot lost or made with other embeddings, or
   * chunks changed since. An import re-indexes only the difference from this commit, and everything without
   * one. An index that keeps nothing (a benchmark's counting index) may leave it out; the importer then
   * trusts its own record of the last indexed commit.
   */
  indexedCommit?(orgId: string, repositoryId: string): Promise<string | undefined>
  /**
   * Resolves once the organisation's term space (vectors/term-space.ts) is learnt from what the index holds now, or
   * found unneeded; vector search uses the embeddings alone until then. For tests and benchmarks.
   */
  meaningLearnt?(orgId: string): Promise<void>
  /**
   * Whether the organisation's index can be searched now, waiting a short while at most (CODE_INDEX_LOAD_WAIT_MS):
   * `loading` while its snapshot is still being loaded (the load goes on), `unavailable` when its snapshot could
   * not be read (tried again on the next call). An index that loads nothing may leave it out: always ready.
   */
  readiness?(orgId: string): Promise<'ready' | 'loading' | 'unavailable'>
  /**
   * Only ever searches repositories of `scope.orgId`; a model's tokens spent on the question are metered to `scope.userId`.
   * With several processes sharing Redis, answered by the process that owns the organisation's index.
   */
  search(scope: { orgId: string; userId?: string }, query: CodeSearchQuery): Promise<CodeSearchResult[]>
  /** Searches the index in this process, whoever owns it: for a search already forwarded, or found to be owned here. Default `search`. */
  searchHere?(scope: { orgId: string; userId?: string }, query: CodeSearchQuery): Promise<CodeSearchResult[]>
  /** With several processes sharing Redis: sends searches to the process that owns the organisation's index. */
  readonly forwarding?: SearchForwarding
  close(): Promise<void>
}
