import { afterAll, describe, expect, test } from 'bun:test'
import { createHttpClient } from '../../src/http.ts'
import { createBraveProvider } from '../../plugins/web-search/providers/brave.ts'
import { createSearxngProvider } from '../../plugins/web-search/providers/searxng.ts'
import { createTavilyProvider } from '../../plugins/web-search/providers/tavily.ts'
import { startFakeBrave, startFakeSearxng, startFakeTavily } from '../fakes/search-providers.ts'

const http = createHttpClient()
const query = { query: 'Bun SQL', count: 2, safeSearch: 'strict' as const, timeoutMs: 5_000 }

describe('SearXNG adapter', () => {
  const searxng = startFakeSearxng()
  afterAll(() => searxng.close())
  const provider = createSearxngProvider({ baseUrl: searxng.url, http })

  test('asks for JSON with the query, safe-search level and first page, and maps every field', async () => {
    const results = await provider.search(query)
    const sent = new URL(searxng.requests.at(-1)!.path, searxng.url)
    expect(sent.pathname).toBe('/search')
    expect(Object.fromEntries(sent.searchParams)).toEqual({ q: 'Bun SQL', format: 'json', safesearch: '2', pageno: '1' })
    // SearXNG has no count parameter: the adapter passes the page on and the service trims it.
    expect(results).toHaveLength(3)
    expect(results[0]).toEqual({
      title: 'Bun SQL',
      url: 'https://bun.sh/docs/api/sql',
      snippet: 'Bun has built-in bindings for PostgreSQL.',
      publishedAt: '2025-01-15T10:00:00.000Z',
      engine: 'duckduckgo',
    })
    expect(results[1]).toEqual({
      title: 'SQLite in Bun',
      url: 'https://bun.sh/docs/api/sqlite',
      snippet: 'A high-performance SQLite driver.',
      engine: 'google',
    })
  })

  test('safe search off and moderate are levels 0 and 1', async () => {
    await provider.search({ ...query, safeSearch: 'off' })
    expect(new URL(searxng.requests.at(-1)!.path, searxng.url).searchParams.get('safesearch')).toBe('0')
    await provider.search({ ...query, safeSearch: 'moderate' })
    expect(new URL(searxng.requests.at(-1)!.path, searxng.url).searchParams.get('safesearch')).toBe('1')
  })

  test('an instance without the JSON format enabled (403) is 502 saying how to enable it', async () => {
    searxng.behaviour = { kind: 'status', status: 403 }
    const error = await provider.search(query).catch((e) => e)
    expect(error).toMatchObject({ code: 'upstream_error', options: { extensions: { provider: 'searxng' } } })
    expect(error.message).toContain('search.formats')
  })
})

describe('Brave adapter', () => {
  const brave = startFakeBrave('brave-key-123')
  afterAll(() => brave.close())

  test('sends the key as X-Subscription-Token with count and safesearch, and maps web.results', async () => {
    const provider = createBraveProvider({ apiKey: 'brave-key-123', baseUrl: brave.url, http })
    const results = await provider.search(query)
    const sent = brave.requests.at(-1)!
    expect(sent.headers['x-subscription-token']).toBe('brave-key-123')
    const params = new URL(sent.path, brave.url).searchParams
    expect(Object.fromEntries(params)).toEqual({ q: 'Bun SQL', count: '2', safesearch: 'strict' })
    expect(results).toEqual([
      {
        title: 'Bun SQL',
        url: 'https://bun.sh/docs/api/sql',
        snippet: 'Bun has built-in bindings for PostgreSQL.',
        publishedAt: '2025-01-15T10:00:00.000Z',
        engine: 'brave',
      },
      { title: 'SQLite in Bun', url: 'https://bun.sh/docs/api/sqlite', snippet: 'A high-performance SQLite driver.', engine: 'brave' },
    ])
  })

  test('snippets lose Brave highlighting markup and entities', async () => {
    brave.behaviour = {
      kind: 'results',
      hits: [{ title: 'Fast &amp; small', url: 'https://example.com/', snippet: 'Use <strong>Bun</strong> &lt;3 &#39;now&#x27;' }],
    }
    const provider = createBraveProvider({ apiKey: 'brave-key-123', baseUrl: brave.url, http })
    const [result] = await provider.search(query)
    expect(result).toMatchObject({ title: 'Fast & small', snippet: "Use Bun <3 'now'" })
  })

  test('an answer without `web` is no results; a wrong key is 502 naming the variable', async () => {
    brave.behaviour = { kind: 'results', hits: [] }
    const provider = createBraveProvider({ apiKey: 'brave-key-123', baseUrl: brave.url, http })
    expect(await provider.search(query)).toEqual([])
    const wrongKey = createBraveProvider({ apiKey: 'wrong', baseUrl: brave.url, http })
    const error = await wrongKey.search(query).catch((e) => e)
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 })
    expect(error.message).toContain('BRAVE_API_KEY')
    expect(error.message).not.toContain('wrong')
  })
})

describe('Tavily adapter', () => {
  const tavily = startFakeTavily('tvly-secret')
  afterAll(() => tavily.close())
  const provider = createTavilyProvider({ apiKey: 'tvly-secret', baseUrl: tavily.url, http })

  test('POSTs the query and max_results as JSON with a bearer key, and maps results', async () => {
    const results = await provider.search(query)
    const sent = tavily.requests.at(-1)!
    expect(sent.method).toBe('POST')
    expect(sent.headers.authorization).toBe('Bearer tvly-secret')
    expect(sent.headers['content-type']).toBe('application/json')
    expect(JSON.parse(sent.body)).toMatchObject({ query: 'Bun SQL', max_results: 2, safe_search: true, include_answer: false })
    expect(results).toEqual([
      {
        title: 'Bun SQL',
        url: 'https://bun.sh/docs/api/sql',
        snippet: 'Bun has built-in bindings for PostgreSQL.',
        publishedAt: '2025-01-15T10:00:00.000Z',
        engine: 'tavily',
      },
      { title: 'SQLite in Bun', url: 'https://bun.sh/docs/api/sqlite', snippet: 'A high-performance SQLite driver.', engine: 'tavily' },
    ])
  })

  test('safe_search is only sent for strict, which is the one level Tavily has', async () => {
    await provider.search({ ...query, safeSearch: 'moderate' })
    expect(JSON.parse(tavily.requests.at(-1)!.body)).not.toHaveProperty('safe_search')
  })

  test('a wrong key is 502 naming the variable', async () => {
    const wrongKey = createTavilyProvider({ apiKey: 'tvly-wrong', baseUrl: tavily.url, http })
    const error = await wrongKey.search(query).catch((e) => e)
    expect(error).toMatchObject({ code: 'upstream_error' })
    expect(error.message).toContain('TAVILY_API_KEY')
  })
})
