import type { HttpClient } from '../../../src/http.ts'
import { isoDate, providerJson, publishedAt, resultList, textOf, type SearchProvider, type Upstream } from './provider.ts'

export interface BraveOptions {
  /** BRAVE_API_KEY, sent as X-Subscription-Token. */
  apiKey: string
  /** Default https://api.search.brave.com (BRAVE_BASE_URL). */
  baseUrl?: string
  http: HttpClient
}

const upstream: Upstream = {
  name: 'brave',
  label: 'Brave Search',
  // Brave answers 422 SUBSCRIPTION_TOKEN_INVALID for a bad key.
  hints: { 401: 'check BRAVE_API_KEY', 403: 'check BRAVE_API_KEY', 422: 'the request or BRAVE_API_KEY was refused' },
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

// Brave marks matched words with <strong> and escapes entities; snippets are plain text for every provider.
function plainText(html: string): string {
  return html.replace(/<[^>]*>/g, '').replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] !== '#') return ENTITIES[name.toLowerCase()] ?? whole
    const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })
}

/** The Brave Search web search API. Brave leaves out `web` entirely when nothing was found. */
export function createBraveProvider(options: BraveOptions): SearchProvider {
  const baseUrl = options.baseUrl ?? 'https://api.search.brave.com'
  return {
    name: 'brave',
    async search({ query, count, safeSearch, timeoutMs }) {
      const url = new URL(`${baseUrl}/res/v1/web/search`)
      url.search = new URLSearchParams({ q: query, count: String(count), safesearch: safeSearch }).toString()
      const body = await providerJson(upstream, () =>
        options.http.request(url, {
          headers: { accept: 'application/json', 'x-subscription-token': options.apiKey },
          timeoutMs,
          upstream: upstream.label,
        }),
      )
      return resultList(body, (b) => (b.web === undefined ? [] : b.web?.results), upstream).map((item) => ({
        title: plainText(textOf(item.title)) || textOf(item.url),
        url: textOf(item.url),
        snippet: plainText(textOf(item.description)),
        // page_age is a date-time; age is often relative ("2 days ago"), which isoDate leaves out.
        ...publishedAt(isoDate(item.page_age) ?? item.age),
        engine: 'brave',
      }))
    },
  }
}
