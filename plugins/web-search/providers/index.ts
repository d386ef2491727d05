import type { WebSearchProviderSettings } from '../settings.ts'
import type { HttpClient } from '../../../src/http.ts'
import { createBraveProvider } from './brave.ts'
import type { SearchProvider } from './provider.ts'
import { createSearxngProvider } from './searxng.ts'
import { createTavilyProvider } from './tavily.ts'

export type { ProviderQuery, SearchProvider } from './provider.ts'

/** The adapter for the provider configuration chose. */
export function createSearchProvider(settings: WebSearchProviderSettings, http: HttpClient): SearchProvider {
  switch (settings.name) {
    case 'searxng':
      return createSearxngProvider({ baseUrl: settings.baseUrl, http })
    case 'brave':
      return createBraveProvider({ apiKey: settings.apiKey, baseUrl: settings.baseUrl, http })
    case 'tavily':
      return createTavilyProvider({ apiKey: settings.apiKey, baseUrl: settings.baseUrl, http })
  }
}
