import type { HttpClient } from '../../../src/http.ts'
import { providerJson, publishedAt, resultList, textOf, type SearchProvider, type Upstream } from './provider.ts'

export interface TavilyOptions {
  /** TAVILY_API_KEY, sent as a bearer token. */
  apiKey: string
  /** Default https://api.tavily.com (TAVILY_BASE_URL). */
  baseUrl?: string
  http: HttpClient
}

const upstream: Upstream = {
  name: 'tavily',
  label: 'Tavily',
  hints: {
    401: 'check TAVILY_API_KEY',
    432: "the key's plan limit is used up",
    433: "the key's pay-as-you-go limit is used up",
  },
}

/** Tavily's search API. Only strict safe search maps onto its on/off `safe_search`; otherwise its default applies. */
export function createTavilyProvider(options: TavilyOptions): SearchProvider {
  const baseUrl = options.baseUrl ?? 'https://api.tavily.com'
  return {
    name: 'tavily',
    async search({ query, count, safeSearch, timeoutMs }) {
      const request = {
        query,
        max_results: count,
        search_depth: 'basic',
        topic: 'general',
        include_answer: false,
        include_raw_content: false,
        include_images: false,
        ...(safeSearch === 'strict' ? { safe_search: true } : {}),
      }
      const body = await providerJson(upstream, () =>
        options.http.request(`${baseUrl}/search`, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` },
          body: JSON.stringify(request),
          // A search changes nothing upstream, so repeating it after a 429 or 5xx is safe.
          idempotent: true,
          timeoutMs,
          upstream: upstream.label,
        }),
      )
      return resultList(body, (b) => b.results, upstream).map((item) => ({
        title: textOf(item.title) || textOf(item.url),
        url: textOf(item.url),
        snippet: textOf(item.content),
        ...publishedAt(item.published_date),
        engine: 'tavily',
      }))
    },
  }
}
