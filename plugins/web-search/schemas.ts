import { t, type Static } from 'elysia'
import { WEB_SEARCH_PROVIDERS } from './settings.ts'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

export const SAFE_SEARCH_LEVELS = ['off', 'moderate', 'strict'] as const
export type SafeSearch = (typeof SAFE_SEARCH_LEVELS)[number]

export const MAX_RESULTS = 20
export const DEFAULT_RESULTS = 5

export const webSearchBody = strictObject({
  query: t.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'What to search for, 1-500 characters', examples: ['bun sql'] }),
  count: t.Optional(integer({ minimum: 1, maximum: MAX_RESULTS, description: `Results wanted, 1-${MAX_RESULTS}. Default ${DEFAULT_RESULTS}` })),
  safeSearch: t.Optional(oneOf(SAFE_SEARCH_LEVELS, { description: 'Adult-content filtering, passed to providers that support it. Default moderate' })),
  fresh: t.Optional(t.Boolean({ description: 'Ask the provider even when a cached answer exists; the new answer is still cached' })),
})

export const webResult = t.Object({
  title: t.String(),
  url: t.String(),
  snippet: t.String({ description: 'Plain-text excerpt of the page' }),
  publishedAt: t.Optional(t.String({ format: 'date-time', description: 'When the page was published, when the provider knows it' })),
  engine: t.String({ description: 'Engine that found the result (for SearXNG, the engine it asked)' }),
})
export type WebResult = Static<typeof webResult>

export const webSearchAnswer = t.Object({
  query: t.String(),
  provider: oneOf(WEB_SEARCH_PROVIDERS),
  cached: t.Boolean({ description: 'Served from the cache (also in the x-cache header: HIT or MISS)' }),
  results: t.Array(webResult),
})
