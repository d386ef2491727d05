/** Web search's slice of the configuration: which search engine answers, and how long answers are reused. */
import { defineSettings, integer, oneOf, text, url, type SettingsOf } from '../../src/config.ts'

export const WEB_SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const
export type WebSearchProviderName = (typeof WEB_SEARCH_PROVIDERS)[number]

/** The variable that makes each web search provider usable. */
export const WEB_SEARCH_PROVIDER_VARIABLES: Readonly<Record<WebSearchProviderName, string>> = {
  searxng: 'SEARXNG_URL',
  brave: 'BRAVE_API_KEY',
  tavily: 'TAVILY_API_KEY',
}

export const webSearchSettings = defineSettings({
  title: 'Web search',
  variables: {
    SEARXNG_URL: { doc: 'SearXNG instance for web search', parse: url('http:', 'https:') },
    BRAVE_API_KEY: { doc: 'Brave Search API key', parse: text },
    TAVILY_API_KEY: { doc: 'Tavily API key', parse: text },
    BRAVE_BASE_URL: { doc: 'Base URL of the Brave Search API', parse: url('http:', 'https:'), fallback: 'https://api.search.brave.com' },
    TAVILY_BASE_URL: { doc: 'Base URL of the Tavily API', parse: url('http:', 'https:'), fallback: 'https://api.tavily.com' },
    WEB_SEARCH_PROVIDER: {
      doc: 'searxng, brave or tavily; unset picks the first configured of SEARXNG_URL, BRAVE_API_KEY, TAVILY_API_KEY',
      parse: oneOf<WebSearchProviderName>(...WEB_SEARCH_PROVIDERS),
    },
    WEB_SEARCH_CACHE_TTL_SECONDS: { doc: 'How long a web search answer is reused for the same query and options', parse: integer(1, 86_400), fallback: 300 },
  },
  build: (v, report) => {
    const configured = {
      searxng: v.SEARXNG_URL ? { name: 'searxng' as const, baseUrl: v.SEARXNG_URL } : undefined,
      brave: v.BRAVE_API_KEY ? { name: 'brave' as const, baseUrl: v.BRAVE_BASE_URL, apiKey: v.BRAVE_API_KEY } : undefined,
      tavily: v.TAVILY_API_KEY ? { name: 'tavily' as const, baseUrl: v.TAVILY_BASE_URL, apiKey: v.TAVILY_API_KEY } : undefined,
    }
    const chosen = v.WEB_SEARCH_PROVIDER
    if (chosen && !configured[chosen]) report.problem(`WEB_SEARCH_PROVIDER is ${chosen} but ${WEB_SEARCH_PROVIDER_VARIABLES[chosen]} is not set`)
    const provider = chosen ? configured[chosen] : WEB_SEARCH_PROVIDERS.map((name) => configured[name]).find(Boolean)
    if (!v.SEARXNG_URL && !v.BRAVE_API_KEY && !v.TAVILY_API_KEY) report.unconfigured('search provider (SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY)')
    return {
      webSearch: {
        /** Undefined when no provider is configured: the route answers 503 not_configured. */
        provider,
        cacheTtlSeconds: v.WEB_SEARCH_CACHE_TTL_SECONDS,
      },
    }
  },
})

/** The search engine web search talks to, with what it needs to reach it. */
export type WebSearchProviderSettings = NonNullable<SettingsOf<typeof webSearchSettings>['webSearch']['provider']>
