/**
 * A search (search.ts): the question checked, its chunks ranked and fused (ranking.ts), and each result's excerpt
 * (snippet.ts). The numbers the ranking weighs with are in ../tuning.ts.
 */
export { createSearch, DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_LENGTH, normaliseQuery, SEARCH_MODES } from './search.ts'
