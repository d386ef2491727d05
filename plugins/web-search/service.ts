/**
 * Web search as a plain service: the route, the chat tool, `!search` and search augmentation all call
 * `search()`. Answers are cached per normalised query and options, and identical searches running at
 * the same time share one upstream call.
 */
import type { Caller } from '../../src/auth/caller.ts'
import { WEB_SEARCH_PROVIDER_VARIABLES, WEB_SEARCH_PROVIDERS, type WebSearchProviderName } from './settings.ts'
import { AppError } from '../../src/errors.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import { createMemorySearchCache, type SearchCache } from './cache.ts'
import { DEFAULT_RESULTS, MAX_RESULTS, type SafeSearch, type WebResult } from './schemas.ts'
import type { ProviderQuery, SearchProvider } from './providers/index.ts'

export interface WebSearchServiceOptions {
  /** The configured engine; undefined makes every search 503 not_configured. */
  provider: SearchProvider | undefined
  /** Where answers are kept. Default: in this process, 1000 entries, on `now`'s clock. */
  cache?: SearchCache
  /** Records one `web_search` event per upstream call, for the caller named in the options. */
  meter?: Pick<UsageMeter, 'record'>
  /** How long an answer is reused. Default 300 (WEB_SEARCH_CACHE_TTL_SECONDS). */
  ttlSeconds?: number
  /** Longest wait for the provider's response headers. Default 10000. */
  timeoutMs?: number
  /** Clock of the default cache, for tests. Default Date.now. */
  now?: () => number
}

export interface WebSearchOptions {
  /** Results wanted, 1-20. Default 5. */
  count?: number
  /** Default moderate. */
  safeSearch?: SafeSearch
  /** Skip the cached answer (a search already in flight is still shared); the new answer is cached. */
  fresh?: boolean
  /** Whose usage an upstream call counts as; calls without one are not metered. */
  caller?: Caller
}

export interface WebSearchAnswer {
  /** The query as given. */
  query: string
  provider: WebSearchProviderName
  /** Served from the cache rather than by an upstream call. */
  cached: boolean
  results: WebResult[]
  /** How long a client may reuse the answer: the cache entry's remaining life, 0 when it was not stored. */
  maxAgeSeconds: number
}

/** Trimmed, inner whitespace collapsed and lower-cased: "  Bun   SQL " and "bun sql" are one search. */
export function normaliseQuery(query: string): string {
  return query.trim().replace(/\s+/g, ' ').toLowerCase()
}

const notConfigured = () => {
  const variables = WEB_SEARCH_PROVIDERS.map((name) => WEB_SEARCH_PROVIDER_VARIABLES[name])
  return new AppError('not_configured', `Web search has no provider; set ${variables.slice(0, -1).join(', ')} or ${variables.at(-1)}`, {
    extensions: { variables },
  })
}

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] })

type Outcome = Omit<WebSearchAnswer, 'query' | 'provider'>

export function createWebSearchService(options: WebSearchServiceOptions) {
  const { provider, meter } = options
  const cache = options.cache ?? createMemorySearchCache({ now: options.now })
  const ttlMs = (options.ttlSeconds ?? 300) * 1000
  const timeoutMs = options.timeoutMs ?? 10_000
  // One promise per search in progress. It covers the cache read too, so a caller arriving after the
  // upstream answer either joins it or finds the answer already stored: never a second call.
  const inFlight = new Map<string, Promise<Outcome>>()

  async function lookUp(engine: SearchProvider, key: string, asked: ProviderQuery, opts: WebSearchOptions): Promise<Outcome> {
    if (!opts.fresh) {
      const hit = await cache.get(key)
      if (hit) return { cached: true, results: JSON.parse(hit.value) as WebResult[], maxAgeSeconds: Math.floor(hit.ttlLeftMs / 1000) }
    }
    const results = (await engine.search(asked)).slice(0, asked.count)
    if (opts.caller) meter?.record({ orgId: opts.caller.orgId, userId: opts.caller.userId, kind: 'web_search' })
    // Nothing found is often an engine's passing hiccup; storing it would hide real results for the whole TTL.
    if (results.length === 0) return { cached: false, results, maxAgeSeconds: 0 }
    await cache.set(key, JSON.stringify(results), ttlMs)
    return { cached: false, results, maxAgeSeconds: ttlMs / 1000 }
  }

  return {
    /** False when no provider is configured; chat skips search augmentation then. */
    configured: provider !== undefined,
    provider: provider?.name,

    async search(query: string, opts: WebSearchOptions = {}): Promise<WebSearchAnswer> {
      if (!provider) throw notConfigured()
      const normalised = normaliseQuery(query)
      if (normalised === '') throw invalid('query', 'must not be blank')
      const count = opts.count ?? DEFAULT_RESULTS
      if (!Number.isInteger(count) || count < 1 || count > MAX_RESULTS) throw invalid('count', `must be a whole number from 1 to ${MAX_RESULTS}`)
      const safeSearch = opts.safeSearch ?? 'moderate'
      const key = `${provider.name}|${count}|${safeSearch}|${normalised}`
      const flightKey = opts.fresh ? `fresh|${key}` : key
      let flight = inFlight.get(flightKey)
      if (!flight) {
        // The engine sees the query as typed, only trimmed: case can matter to an engine even though the cache ignores it.
        const asked = { query: query.trim().replace(/\s+/g, ' '), count, safeSearch, timeoutMs }
        flight = lookUp(provider, key, asked, opts).finally(() => inFlight.delete(flightKey))
        inFlight.set(flightKey, flight)
      }
      return { query, provider: provider.name, ...(await flight) }
    },

    close: () => cache.close(),
  }
}

export type WebSearchService = ReturnType<typeof createWebSearchService>
