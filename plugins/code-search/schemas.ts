import { t, type Static } from 'elysia'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_LENGTH, SEARCH_MODES } from './search/index.ts'

export const codeSearchBody = strictObject({
  query: t.String({
    minLength: 1,
    maxLength: MAX_QUERY_LENGTH,
    pattern: '\\S',
    description: `What to look for: words, identifiers (any spelling: parseConfig, parse_config) or a description; 1-${MAX_QUERY_LENGTH} characters`,
    examples: ['verify webhook signature'],
  }),
  repositoryIds: t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 200 }), {
      minItems: 1,
      maxItems: 100,
      description: 'Only these imported repositories (ids). Default: every repository of the organisation',
    }),
  ),
  languages: t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 50 }), {
      minItems: 1,
      maxItems: 50,
      description: 'Only files in these languages, compared case-insensitively (TypeScript, Python, Go ...)',
    }),
  ),
  pathPrefix: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 500,
      description: 'Only paths starting with this (src/auth/ for a folder); a leading ./ or / is ignored',
      examples: ['src/'],
    }),
  ),
  mode: t.Optional(
    oneOf(SEARCH_MODES, {
      description: 'hybrid (default): full-text and vector scores fused; text: BM25 over identifiers and words; vector: nearest chunks by embedding',
    }),
  ),
  limit: t.Optional(integer({ minimum: 1, maximum: MAX_LIMIT, description: `Results wanted, 1-${MAX_LIMIT}. Default ${DEFAULT_LIMIT}` })),
  expand: t.Optional(
    t.Boolean({
      description:
        'When the service has CODE_SEARCH_EXPANSION_MODEL set: a model writes the code the question describes and both are searched (default true); false searches the question alone. Ignored otherwise',
    }),
  ),
})
export type CodeSearchBody = Static<typeof codeSearchBody>

export const codeSearchResult = t.Object({
  repositoryId: t.String(),
  repositoryName: t.String({ description: 'As imported, e.g. owner/name' }),
  path: t.String({ description: 'Path in the repository, forward slashes' }),
  language: t.Optional(t.String({ description: 'Language of the file, when known' })),
  startLine: integer({ minimum: 1, description: 'First line of the matching chunk, 1-based' }),
  endLine: integer({ minimum: 1, description: 'Last line of the matching chunk, inclusive' }),
  snippet: t.String({ description: 'A few lines of the chunk, HTML-escaped, matched words in <mark>…</mark>' }),
  score: t.Number({
    description:
      "Higher is better; comparable within one answer. hybrid: up to 1.6 (1 for first in both lists, plus 0.6 for the best-matching file); text: BM25; vector: cosine similarity; with a model's code for the question, 0..1 in every mode",
  }),
})

export const codeSearchAnswer = t.Object({
  query: t.String(),
  mode: oneOf(SEARCH_MODES),
  results: t.Array(codeSearchResult),
  partial: t.Optional(
    t.Boolean({
      description:
        "Present and true when the organisation's index could not be searched whole yet: its snapshot is still being loaded by the process answering (after the process holding it stopped), or could not be read. The results are then empty; the X-Code-Search-Partial header says which (loading, unavailable); ask again shortly",
    }),
  ),
})

// Bounds only what any caller of CodeIndex.search may send (the search checks the rest, as it does for them): the
// query comes trimmed, and lists and strings as long as a caller made them, within the body limit.
const anyString = t.String({ maxLength: 10_000 })
const anyList = t.Optional(t.Array(anyString, { maxItems: 10_000 }))

/** A search another process sends the owner of the index: the scope it was made in and the query. */
export const scopedSearchBody = strictObject({
  scope: strictObject({ orgId: t.String({ minLength: 1, maxLength: 200 }), userId: t.Optional(t.String({ minLength: 1, maxLength: 200 })) }),
  query: strictObject({
    query: t.String({ minLength: 1, maxLength: MAX_QUERY_LENGTH, pattern: '\\S' }),
    repositoryIds: anyList,
    languages: anyList,
    pathPrefix: t.Optional(anyString),
    mode: t.Optional(oneOf(SEARCH_MODES)),
    limit: t.Optional(integer({ minimum: 1, maximum: MAX_LIMIT })),
    expand: t.Optional(t.Boolean()),
  }),
})

export const scopedSearchAnswer = t.Object({ results: t.Array(codeSearchResult) })
