import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import { createHttpClient } from '../../src/http.ts'
import type { UsageEvent } from '../../src/usage/meter.ts'
import { createSearxngProvider } from '../../plugins/web-search/providers/searxng.ts'
import { createTavilyProvider } from '../../plugins/web-search/providers/tavily.ts'
import { createWebSearchService, normaliseQuery } from '../../plugins/web-search/service.ts'
import { sampleHits, startFakeSearxng, startFakeTavily } from '../fakes/search-providers.ts'

const searxng = startFakeSearxng()
afterAll(() => searxng.close())

let clock = Date.UTC(2026, 0, 1)
let usage: UsageEvent[] = []
beforeEach(() => {
  searxng.behaviour = { kind: 'results', hits: sampleHits }
  usage = []
})

function service(options: { timeoutMs?: number } = {}) {
  const provider = createSearxngProvider({ baseUrl: searxng.url, http: createHttpClient() })
  return createWebSearchService({ provider, now: () => clock, meter: { record: (e) => void usage.push(e) }, ...options })
}

/** Upstream calls made while `work` runs. */
async function callsDuring(work: () => Promise<unknown>): Promise<number> {
  const before = searxng.calls
  await work()
  return searxng.calls - before
}

const caller = { orgId: 'org-1', userId: 'user-1' }

describe('caching', () => {
  test('the second identical search is served from the cache, whatever its spacing and case', async () => {
    const search = service()
    expect(normaliseQuery('  Bun   SQL ')).toBe('bun sql')
    const calls = await callsDuring(async () => {
      const first = await search.search('  Bun   SQL ')
      expect(first).toMatchObject({ query: '  Bun   SQL ', provider: 'searxng', cached: false, maxAgeSeconds: 300 })
      const second = await search.search('bun sql')
      expect(second).toMatchObject({ cached: true, maxAgeSeconds: 300 })
      expect(second.results).toEqual(first.results)
    })
    expect(calls).toBe(1)
    // The engine saw the query trimmed, with its case kept.
    expect(new URL(searxng.requests.at(-1)!.path, searxng.url).searchParams.get('q')).toBe('Bun SQL')
  })

  test('count and safe search are part of the key', async () => {
    const search = service()
    const calls = await callsDuring(async () => {
      await search.search('bun test', { count: 2 })
      await search.search('bun test', { count: 3 })
      await search.search('bun test', { count: 3, safeSearch: 'strict' })
      expect((await search.search('bun test', { count: 2 })).cached).toBe(true)
    })
    expect(calls).toBe(3)
  })

  test('the engine page is trimmed to the count asked for', async () => {
    expect((await service().search('bun count', { count: 2 })).results).toHaveLength(2)
  })

  test('an answer lives for the TTL on the injected clock, counting down its max age, then is asked for again', async () => {
    const search = service()
    await search.search('bun expiry')
    clock += 299_500
    const late = await search.search('bun expiry')
    expect(late).toMatchObject({ cached: true, maxAgeSeconds: 0 })
    clock += 500
    const calls = await callsDuring(async () => expect((await search.search('bun expiry')).cached).toBe(false))
    expect(calls).toBe(1)
  })

  test('50 concurrent identical searches make exactly one upstream call and share its answer', async () => {
    const search = service()
    let answers: Awaited<ReturnType<typeof search.search>>[] = []
    const calls = await callsDuring(async () => {
      answers = await Promise.all(Array.from({ length: 50 }, () => search.search('Bun concurrency', { caller })))
    })
    expect(calls).toBe(1)
    expect(new Set(answers.map((a) => JSON.stringify(a.results))).size).toBe(1)
    expect(answers[0]!.results).toHaveLength(3)
    expect(usage).toHaveLength(1)
  })

  test('an empty result list is answered but not stored', async () => {
    searxng.behaviour = { kind: 'results', hits: [] }
    const search = service()
    const calls = await callsDuring(async () => {
      expect(await search.search('nothing here')).toMatchObject({ cached: false, results: [], maxAgeSeconds: 0 })
      expect((await search.search('nothing here')).cached).toBe(false)
    })
    expect(calls).toBe(2)
  })

  test('a failed search is not stored: the next one asks again and gets the answer', async () => {
    searxng.behaviour = { kind: 'status', status: 500 }
    const search = service()
    expect(await search.search('flaky').catch((e) => e)).toMatchObject({ code: 'upstream_error' })
    searxng.behaviour = { kind: 'results', hits: sampleHits }
    const answer = await search.search('flaky')
    expect(answer).toMatchObject({ cached: false })
    expect(answer.results).toHaveLength(3)
  })

  test('fresh skips the stored answer but stores the new one', async () => {
    const search = service()
    await search.search('bun fresh')
    searxng.behaviour = { kind: 'results', hits: [sampleHits[2]!] }
    const fresh = await search.search('bun fresh', { fresh: true })
    expect(fresh.cached).toBe(false)
    expect(fresh.results.map((r) => r.url)).toEqual([sampleHits[2]!.url])
    const after = await search.search('bun fresh')
    expect(after).toMatchObject({ cached: true })
    expect(after.results.map((r) => r.url)).toEqual([sampleHits[2]!.url])
  })
})

describe('usage', () => {
  test('one web_search event per upstream call, for the caller; cache hits are free', async () => {
    const search = service()
    await search.search('bun usage', { caller })
    await search.search('bun usage', { caller })
    await search.search('bun usage', { caller, fresh: true })
    expect(usage).toEqual([
      { orgId: 'org-1', userId: 'user-1', kind: 'web_search' },
      { orgId: 'org-1', userId: 'user-1', kind: 'web_search' },
    ])
  })

  test('a failed upstream call is not metered', async () => {
    searxng.behaviour = { kind: 'status', status: 500 }
    await service()
      .search('bun usage failure', { caller })
      .catch(() => {})
    expect(usage).toEqual([])
  })
})

describe('upstream failures', () => {
  test('a 500 is 502 upstream_error naming the provider, after one call (5xx other than 502-504 is not retried)', async () => {
    searxng.behaviour = { kind: 'status', status: 500 }
    let error: unknown
    const calls = await callsDuring(
      async () =>
        (error = await service()
          .search('bun 500')
          .catch((e) => e)),
    )
    expect(calls).toBe(1)
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'upstream_error', status: 502, options: { extensions: { provider: 'searxng' } } })
    expect((error as Error).message).toContain('SearXNG answered 500')
  })

  test('malformed JSON is 502 upstream_error', async () => {
    searxng.behaviour = { kind: 'malformed' }
    const error = await service()
      .search('bun malformed')
      .catch((e) => e)
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 })
    expect(error.message).toContain('malformed JSON')
  })

  test('an engine that does not answer in time is 504 upstream_timeout naming it', async () => {
    searxng.behaviour = { kind: 'silent' }
    const error = await service({ timeoutMs: 100 })
      .search('bun timeout')
      .catch((e) => e)
    expect(error).toMatchObject({ code: 'upstream_timeout', status: 504, options: { extensions: { provider: 'searxng' } } })
    expect(error.message).toContain('SearXNG did not answer')
  })

  test('a Tavily 429 is retried as asked by Retry-After (the POST counts as idempotent), then is 503 unavailable', async () => {
    const tavily = startFakeTavily('tvly-key')
    try {
      tavily.behaviour = { kind: 'status', status: 429, retryAfter: '2' }
      const sleeps: number[] = []
      const http = createHttpClient({ sleep: async (ms) => void sleeps.push(ms) })
      const search = createWebSearchService({ provider: createTavilyProvider({ apiKey: 'tvly-key', baseUrl: tavily.url, http }) })
      const error = await search.search('bun 429').catch((e) => e)
      expect(tavily.calls).toBe(3)
      expect(sleeps).toEqual([2000, 2000])
      expect(error).toMatchObject({ code: 'unavailable', status: 503, options: { extensions: { provider: 'tavily' }, headers: { 'retry-after': '2' } } })
      expect(error.message).toContain('Tavily')
    } finally {
      await tavily.close()
    }
  })

  test('with no provider every search is 503 not_configured naming the variables to set', async () => {
    const search = createWebSearchService({ provider: undefined })
    expect(search.configured).toBe(false)
    const error = await search.search('anything').catch((e) => e)
    expect(error).toMatchObject({ code: 'not_configured', status: 503 })
    expect(error.message).toContain('SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY')
  })

  test('a caller outside the route is held to the same limits: blank query, count out of range', async () => {
    const search = service()
    expect(await search.search('   ').catch((e) => e)).toMatchObject({ code: 'validation_failed', options: { errors: [{ field: 'query' }] } })
    expect(await search.search('bun', { count: 21 }).catch((e) => e)).toMatchObject({ code: 'validation_failed', options: { errors: [{ field: 'count' }] } })
  })
})
