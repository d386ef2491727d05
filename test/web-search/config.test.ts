import { afterAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/main/config.ts'
import { startFakeBrave, startFakeTavily } from '../fakes/search-providers.ts'
import { bearer, makeApp, tempDir, userWithRole } from '../helpers.ts'

const dir = tempDir()
afterAll(() => dir.remove())
const load = (env: Record<string, string>) => loadConfig({ DATA_DIR: dir.path, ...env })

describe('web search configuration', () => {
  test('no provider variables: no provider, a 5-minute TTL, and the start-up report names the variables', () => {
    const config = load({})
    expect(config.webSearch).toEqual({ provider: undefined, cacheTtlSeconds: 300 })
    expect(config.unconfigured.join(' ')).toContain('SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY')
  })

  test('unset WEB_SEARCH_PROVIDER picks the first configured of SearXNG, Brave, Tavily', () => {
    expect(load({ TAVILY_API_KEY: 't', BRAVE_API_KEY: 'b', SEARXNG_URL: 'http://searx.local/' }).webSearch.provider).toEqual({
      name: 'searxng',
      baseUrl: 'http://searx.local',
    })
    expect(load({ TAVILY_API_KEY: 't', BRAVE_API_KEY: 'b' }).webSearch.provider).toEqual({
      name: 'brave',
      baseUrl: 'https://api.search.brave.com',
      apiKey: 'b',
    })
    expect(load({ TAVILY_API_KEY: 't' }).webSearch.provider).toEqual({ name: 'tavily', baseUrl: 'https://api.tavily.com', apiKey: 't' })
  })

  test('WEB_SEARCH_PROVIDER chooses among the configured ones, with the base URL given', () => {
    const config = load({ SEARXNG_URL: 'http://searx.local', TAVILY_API_KEY: 't', WEB_SEARCH_PROVIDER: 'tavily', TAVILY_BASE_URL: 'http://127.0.0.1:9/' })
    expect(config.webSearch.provider).toEqual({ name: 'tavily', baseUrl: 'http://127.0.0.1:9', apiKey: 't' })
    expect(load({ WEB_SEARCH_CACHE_TTL_SECONDS: '60' }).webSearch.cacheTtlSeconds).toBe(60)
  })

  test('a chosen provider without its key, an unknown provider and a zero TTL are reported together', () => {
    let error: unknown
    try {
      load({ WEB_SEARCH_PROVIDER: 'brave', WEB_SEARCH_CACHE_TTL_SECONDS: '0' })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems
    expect(problems).toContain('WEB_SEARCH_PROVIDER is brave but BRAVE_API_KEY is not set')
    expect(problems.some((p) => p.startsWith('WEB_SEARCH_CACHE_TTL_SECONDS must be between'))).toBe(true)
    expect(() => load({ WEB_SEARCH_PROVIDER: 'bing' })).toThrow('WEB_SEARCH_PROVIDER must be one of searxng, brave, tavily')
  })
})

describe('the configured provider answers the route', () => {
  test('Brave, reached at BRAVE_BASE_URL with BRAVE_API_KEY', async () => {
    const brave = startFakeBrave('brave-config-key')
    const t = await makeApp({ BRAVE_API_KEY: 'brave-config-key', BRAVE_BASE_URL: brave.url })
    try {
      const { token } = await userWithRole(t, 'member')
      const res = await t.send('POST', '/api/web-search', { query: `brave ${crypto.randomUUID()}`, count: 2 }, bearer(token))
      expect(res.status).toBe(200)
      const body = await res.json()
      expect(body.provider).toBe('brave')
      expect(body.results).toHaveLength(2)
      expect(brave.requests.at(-1)!.headers['x-subscription-token']).toBe('brave-config-key')
    } finally {
      await t.close()
      await brave.close()
    }
  })

  test('Tavily, reached at TAVILY_BASE_URL with TAVILY_API_KEY', async () => {
    const tavily = startFakeTavily('tvly-config-key')
    const t = await makeApp({ TAVILY_API_KEY: 'tvly-config-key', TAVILY_BASE_URL: tavily.url })
    try {
      const { token } = await userWithRole(t, 'member')
      const res = await t.send('POST', '/api/web-search', { query: `tavily ${crypto.randomUUID()}` }, bearer(token))
      expect(res.status).toBe(200)
      expect((await res.json()).provider).toBe('tavily')
      expect(JSON.parse(tavily.requests.at(-1)!.body).max_results).toBe(5)
    } finally {
      await t.close()
      await tavily.close()
    }
  })
})
