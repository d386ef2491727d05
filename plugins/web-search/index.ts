import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { webSearchAnswer, webSearchBody } from './schemas.ts'
import type { WebSearchService } from './service.ts'
export { webSearchSettings } from './settings.ts'

export { createWebSearchService, type WebSearchService } from './service.ts'
export { createMemorySearchCache, createRedisSearchCache } from './cache.ts'
export { createSearchProvider } from './providers/index.ts'

export interface WebSearchPluginOptions {
  webSearch: WebSearchService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

/**
 * POST /api/web-search. Web search feeds chat augmentation, so the chat scope governs it; the cache
 * state is in `x-cache` and how long the answer stays good in `Cache-Control`.
 */
export function webSearchPlugin(options: WebSearchPluginOptions) {
  const { webSearch } = options
  return new Elysia({ name: 'web-search', detail: { tags: ['web search'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/web-search',
      async ({ body, principal, set }) => {
        const answer = await webSearch.search(body.query, {
          count: body.count,
          safeSearch: body.safeSearch,
          fresh: body.fresh,
          caller: { orgId: principal.orgId, userId: principal.userId },
        })
        set.headers['x-cache'] = answer.cached ? 'HIT' : 'MISS'
        // private: the answer went through one user's authorisation and must not sit in a shared cache.
        set.headers['cache-control'] = `private, max-age=${answer.maxAgeSeconds}`
        return { query: answer.query, provider: answer.provider, cached: answer.cached, results: answer.results }
      },
      {
        body: webSearchBody,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: webSearchAnswer, 401: problem, 403: problem, 422: problem, 429: problem, 502: problem, 503: problem, 504: problem },
        detail: {
          summary: 'Search the web through the configured provider (SearXNG, Brave or Tavily), with cached answers',
          description:
            'Identical searches (query compared trimmed, whitespace collapsed and case-insensitively, with the same count and safeSearch) are answered from the cache for WEB_SEARCH_CACHE_TTL_SECONDS (300 s). ' +
            'Upstream failures: 502 upstream_error, 503 unavailable (the provider is rate limiting), 504 upstream_timeout; 503 not_configured when no provider is set.',
        },
      },
    )
}
