import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { createHttpClient } from '../../src/http.ts'
import { queryUsage } from '../../src/usage/meter.ts'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { createSearxngProvider } from '../../plugins/web-search/providers/searxng.ts'
import { createWebSearchService, type WebSearchServiceOptions } from '../../plugins/web-search/service.ts'
import { sampleHits, startFakeSearxng } from '../fakes/search-providers.ts'
import { BASE, bearer, makeApp, userWithRole, type TestApp } from '../helpers.ts'

const searxng = startFakeSearxng()
const t = await makeApp({ SEARXNG_URL: searxng.url })
const member = await userWithRole(t, 'member')
afterAll(async () => {
  await t.close()
  await searxng.close()
})
beforeEach(() => {
  searxng.behaviour = { kind: 'results', hits: sampleHits }
})

// With REDIS_URL set the app's cache is Redis, which outlives a run; a run's own queries cannot hit old answers.
const run = crypto.randomUUID().slice(0, 8)

type Send = (body: unknown, headers?: Record<string, string>) => Promise<Response>

const sender =
  (handle: (request: Request) => Response | Promise<Response>, token = member.token): Send =>
  (body, headers = bearer(token)) =>
    Promise.resolve(
      handle(
        new Request(`${BASE}/api/web-search`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }),
      ),
    )

const search = sender((request) => t.app.handle(request))

/** The same app with its own web search service: an injected clock, a short timeout. */
function appWith(options: Partial<WebSearchServiceOptions>): Send {
  const provider = createSearxngProvider({ baseUrl: searxng.url, http: createHttpClient() })
  const app = createApp({ ...t.deps, webSearch: createWebSearchService({ provider, ...options }) })
  return sender((request) => app.handle(request))
}

async function callsDuring(work: () => Promise<unknown>): Promise<number> {
  const before = searxng.calls
  await work()
  return searxng.calls - before
}

describe('POST /api/web-search', () => {
  test('answers the provider results, then the same search from the cache, metering only the upstream call', async () => {
    const query = `Bun SQL ${run}`
    let calls = await callsDuring(async () => {
      const miss = await search({ query })
      expect(miss.status).toBe(200)
      expect(miss.headers.get('x-cache')).toBe('MISS')
      expect(miss.headers.get('cache-control')).toBe('private, max-age=300')
      const body = await miss.json()
      expect(body).toMatchObject({ query, provider: 'searxng', cached: false })
      expect(body.results).toHaveLength(3)
      expect(body.results[0]).toEqual({
        title: 'Bun SQL',
        url: 'https://bun.sh/docs/api/sql',
        snippet: 'Bun has built-in bindings for PostgreSQL.',
        publishedAt: '2025-01-15T10:00:00.000Z',
        engine: 'duckduckgo',
      })
    })
    expect(calls).toBe(1)

    calls = await callsDuring(async () => {
      const hit = await search({ query: `  bun   sql ${run.toUpperCase()} ` })
      expect(hit.status).toBe(200)
      expect(hit.headers.get('x-cache')).toBe('HIT')
      expect(hit.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/)
      expect(await hit.json()).toMatchObject({ cached: true })
    })
    expect(calls).toBe(0)

    await t.deps.meter.flush()
    const usage = await queryUsage(t.deps.db, {
      orgId: member.user.orgId,
      userId: member.user.id,
      kind: 'web_search',
      from: 0,
      to: Date.now() + 1000,
      bucket: 'day',
    })
    expect(usage.totals).toEqual([{ kind: 'web_search', model: null, quantity: 1 }])
  })

  test('count and safeSearch reach the engine; count bounds the results', async () => {
    const res = await search({ query: `bun options ${run}`, count: 1, safeSearch: 'strict' })
    expect((await res.json()).results).toHaveLength(1)
    const sent = new URL(searxng.requests.at(-1)!.path, searxng.url).searchParams
    expect(sent.get('safesearch')).toBe('2')
  })

  test('Cache-Control counts down on the injected clock, and the answer is asked for again once the TTL is over', async () => {
    let clock = 0
    const send = appWith({ now: () => clock, ttlSeconds: 300 })
    await send({ query: 'bun expiry' })
    clock = 299_000
    const late = await send({ query: 'bun expiry' })
    expect(late.headers.get('x-cache')).toBe('HIT')
    expect(late.headers.get('cache-control')).toBe('private, max-age=1')
    clock = 300_000
    const calls = await callsDuring(async () => expect((await send({ query: 'bun expiry' })).headers.get('x-cache')).toBe('MISS'))
    expect(calls).toBe(1)
  })

  test('50 concurrent identical requests make exactly one upstream call', async () => {
    const send = appWith({})
    let responses: Response[] = []
    const calls = await callsDuring(async () => {
      responses = await Promise.all(Array.from({ length: 50 }, () => send({ query: 'bun single flight' })))
    })
    expect(calls).toBe(1)
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200))
    const bodies = await Promise.all(responses.map((r) => r.json()))
    expect(new Set(bodies.map((b) => JSON.stringify(b.results))).size).toBe(1)
  })

  test('an empty answer is returned but not cached', async () => {
    searxng.behaviour = { kind: 'results', hits: [] }
    const send = appWith({})
    const calls = await callsDuring(async () => {
      for (let i = 0; i < 2; i++) {
        const res = await send({ query: 'nothing at all' })
        expect(res.headers.get('x-cache')).toBe('MISS')
        expect(res.headers.get('cache-control')).toBe('private, max-age=0')
        expect((await res.json()).results).toEqual([])
      }
    })
    expect(calls).toBe(2)
  })

  test('fresh asks the engine even when an answer is cached', async () => {
    const send = appWith({})
    await send({ query: 'bun fresh' })
    const calls = await callsDuring(async () => expect((await send({ query: 'bun fresh', fresh: true })).headers.get('x-cache')).toBe('MISS'))
    expect(calls).toBe(1)
  })
})

describe('upstream failures', () => {
  const problemOf = async (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), body: await res.json() })

  test('a 500 is 502 upstream_error naming the provider', async () => {
    searxng.behaviour = { kind: 'status', status: 500 }
    const { status, type, body } = await problemOf(await search({ query: `bun 500 ${run}` }))
    expect({ status, type }).toEqual({ status: 502, type: 'application/problem+json' })
    expect(body).toMatchObject({ code: 'upstream_error', provider: 'searxng' })
    expect(body.detail).toContain('SearXNG')
  })

  test('a 429 is retried, then 503 unavailable naming the provider', async () => {
    searxng.behaviour = { kind: 'status', status: 429, retryAfter: '0' }
    let res: Response | undefined
    const calls = await callsDuring(async () => (res = await search({ query: `bun 429 ${run}` })))
    expect(calls).toBe(3)
    const { status, body } = await problemOf(res!)
    expect(status).toBe(503)
    expect(body).toMatchObject({ code: 'unavailable', provider: 'searxng' })
  })

  test('an engine that never answers is 504 upstream_timeout', async () => {
    searxng.behaviour = { kind: 'silent' }
    const { status, body } = await problemOf(await appWith({ timeoutMs: 100 })({ query: 'bun timeout' }))
    expect(status).toBe(504)
    expect(body).toMatchObject({ code: 'upstream_timeout', provider: 'searxng' })
  })

  test('malformed JSON is 502 upstream_error', async () => {
    searxng.behaviour = { kind: 'malformed' }
    const { status, body } = await problemOf(await search({ query: `bun malformed ${run}` }))
    expect(status).toBe(502)
    expect(body).toMatchObject({ code: 'upstream_error', provider: 'searxng' })
  })

  test('with no provider configured the route is 503 not_configured naming the variables', async () => {
    const bare: TestApp = await makeApp()
    try {
      const { token } = await userWithRole(bare, 'member')
      const res = await sender((request) => bare.app.handle(request), token)({ query: 'bun' })
      expect(res.status).toBe(503)
      const body = await res.json()
      expect(body).toMatchObject({ code: 'not_configured', variables: ['SEARXNG_URL', 'BRAVE_API_KEY', 'TAVILY_API_KEY'] })
      expect(body.detail).toContain('SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY')
    } finally {
      await bare.close()
    }
  })
})

describe('access and validation', () => {
  test('no token is 401 with a Bearer challenge', async () => {
    const res = await search({ query: 'bun' }, {})
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  test('a viewer, who has no chat:write, is 403 insufficient_scope', async () => {
    const viewer = await userWithRole(t, 'viewer')
    const res = await search({ query: 'bun' }, bearer(viewer.token))
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'chat:write' })
  })

  test.each([
    ['an empty query', { query: '' }, 'query'],
    ['a blank query', { query: '   ' }, 'query'],
    ['a query over 500 characters', { query: 'x'.repeat(501) }, 'query'],
    ['an unknown field', { query: 'bun', engine: 'google' }, 'engine'],
    ['count 50', { query: 'bun', count: 50 }, 'count'],
    ['count 0', { query: 'bun', count: 0 }, 'count'],
    ['an unknown safe-search level', { query: 'bun', safeSearch: 'extreme' }, 'safeSearch'],
  ])('%s is 422 naming the field', async (_, body, field) => {
    const calls = await callsDuring(async () => {
      const res = await search(body)
      expect(res.status).toBe(422)
      const problem = await res.json()
      expect(problem.code).toBe('validation_failed')
      expect(problem.errors.map((e: { field: string }) => e.field)).toContain(field)
    })
    expect(calls).toBe(0)
  })

  test('the OpenAPI document describes the route, its scope and every answer', async () => {
    const doc = await (await t.request(OPENAPI_JSON_PATH)).json()
    const operation = doc.paths['/api/web-search'].post
    expect(operation['x-required-scope']).toBe('chat:write')
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '403', '413', '414', '415', '422', '429', '431', '502', '503', '504'])
    expect(operation.requestBody.content['application/json'].schema.properties).toHaveProperty('safeSearch')
  })
})
