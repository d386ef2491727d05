import type { HttpClient } from '../../../src/http.ts'
import type { SafeSearch } from '../schemas.ts'
import { providerJson, publishedAt, resultList, textOf, type SearchProvider, type Upstream } from './provider.ts'

export interface SearxngOptions {
  /** The instance, e.g. `https://searx.example.org` (SEARXNG_URL). */
  baseUrl: string
  http: HttpClient
}

const SAFE_SEARCH: Record<SafeSearch, string> = { off: '0', moderate: '1', strict: '2' }

const upstream: Upstream = {
  name: 'searxng',
  label: 'SearXNG',
  // SearXNG refuses formats its settings do not list; JSON is off by default.
  hints: { 403: 'enable the json format in the instance settings (search.formats)' },
}

/** A self-hosted SearXNG instance through its JSON API. It has no result count, so one page is asked for. */
export function createSearxngProvider(options: SearxngOptions): SearchProvider {
  return {
    name: 'searxng',
    async search({ query, safeSearch, timeoutMs }) {
      const url = new URL(`${options.baseUrl}/search`)
      url.search = new URLSearchParams({ q: query, format: 'json', safesearch: SAFE_SEARCH[safeSearch], pageno: '1' }).toString()
      const body = await providerJson(upstream, () =>
        options.http.request(url, { headers: { accept: 'application/json' }, timeoutMs, upstream: upstream.label }),
      )
      return resultList(body, (b) => b.results, upstream).map((item) => ({
        title: textOf(item.title) || textOf(item.url),
        url: textOf(item.url),
        snippet: textOf(item.content),
        ...publishedAt(item.publishedDate),
        engine: textOf(item.engine) || 'searxng',
      }))
    },
  }
}
