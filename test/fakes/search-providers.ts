/**
 * Fake search engines speaking the real APIs: SearXNG's JSON API, Brave Search's web search and
 * Tavily's search. Each checks what the real one checks (format, key, body), answers in its shape,
 * and can be told to fail, answer garbage or never answer.
 */
import { startFakeServer, type RecordedRequest } from './server.ts'

export interface FakeHit {
  title: string
  url: string
  snippet: string
  /** ISO instant; each fake writes it the way its engine does. */
  publishedAt?: string
  /** SearXNG only: the engine credited with the hit. */
  engine?: string
}

/** What the fake answers from now on. */
export type FakeSearchBehaviour =
  | { kind: 'results'; hits: FakeHit[] }
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'malformed' }
  /** Accepts the request and never answers. */
  | { kind: 'silent' }

export interface FakeSearchEngine {
  readonly url: string
  readonly requests: RecordedRequest[]
  /** Search requests received, every retry included. */
  readonly calls: number
  behaviour: FakeSearchBehaviour
  close(): Promise<void>
}

export const sampleHits: FakeHit[] = [
  {
    title: 'Bun SQL',
    url: 'https://bun.sh/docs/api/sql',
    snippet: 'Bun has built-in bindings for PostgreSQL.',
    publishedAt: '2025-01-15T10:00:00.000Z',
    engine: 'duckduckgo',
  },
  { title: 'SQLite in Bun', url: 'https://bun.sh/docs/api/sqlite', snippet: 'A high-performance SQLite driver.', engine: 'google' },
  { title: 'Bun 1.2', url: 'https://bun.sh/blog/bun-v1.2', snippet: 'Postgres, S3 and more.', publishedAt: '2025-01-22T00:00:00.000Z', engine: 'brave' },
]

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

// SearXNG and Brave write naive date-times (no zone); the adapters must read them as UTC.
const naive = (iso: string) => iso.replace(/\.\d+Z$|Z$/, '')

function startEngine(answer: (request: Request, hits: FakeHit[]) => Response | Promise<Response>, isSearch: (request: Request) => boolean): FakeSearchEngine {
  const engine = {
    behaviour: { kind: 'results', hits: sampleHits } as FakeSearchBehaviour,
    calls: 0,
  }
  const server = startFakeServer(async (request) => {
    if (!isSearch(request)) return json({ error: 'not found' }, 404)
    engine.calls++
    const behaviour = engine.behaviour
    switch (behaviour.kind) {
      case 'silent':
        return new Promise<Response>(() => {})
      case 'malformed':
        return new Response('{"results": [{"title": "cut off', { headers: { 'content-type': 'application/json' } })
      case 'status':
        return json(
          { error: `status ${behaviour.status}` },
          behaviour.status,
          behaviour.retryAfter === undefined ? {} : { 'retry-after': behaviour.retryAfter },
        )
      case 'results':
        return answer(request, behaviour.hits)
    }
  })
  return {
    url: server.url,
    requests: server.requests,
    get calls() {
      return engine.calls
    },
    get behaviour() {
      return engine.behaviour
    },
    set behaviour(next) {
      engine.behaviour = next
    },
    close: () => server.close(),
  }
}

/** SearXNG: GET /search?q&format=json&safesearch&pageno; without format=json it serves its HTML page. */
export function startFakeSearxng(): FakeSearchEngine {
  return startEngine(
    (request, hits) => {
      const params = new URL(request.url).searchParams
      if (params.get('format') !== 'json') return new Response('<!DOCTYPE html><html><body>results</body></html>', { headers: { 'content-type': 'text/html' } })
      return json({
        query: params.get('q'),
        number_of_results: 0,
        results: hits.map((hit, i) => ({
          url: hit.url,
          title: hit.title,
          content: hit.snippet,
          publishedDate: hit.publishedAt ? naive(hit.publishedAt) : null,
          engine: hit.engine ?? 'duckduckgo',
          engines: [hit.engine ?? 'duckduckgo'],
          positions: [i + 1],
          score: 1 / (i + 1),
          category: 'general',
        })),
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      })
    },
    (request) => request.method === 'GET' && new URL(request.url).pathname === '/search',
  )
}

/** Brave: GET /res/v1/web/search with X-Subscription-Token; leaves out `web` when nothing was found. */
export function startFakeBrave(apiKey: string): FakeSearchEngine {
  return startEngine(
    (request, hits) => {
      if (request.headers.get('x-subscription-token') !== apiKey)
        return json(
          {
            type: 'ErrorResponse',
            error: { id: crypto.randomUUID(), status: 422, code: 'SUBSCRIPTION_TOKEN_INVALID', detail: 'The provided subscription token is invalid.' },
          },
          422,
        )
      const params = new URL(request.url).searchParams
      const count = Number(params.get('count') ?? 20)
      const found = hits.slice(0, count)
      return json({
        type: 'search',
        query: { original: params.get('q'), more_results_available: false },
        ...(found.length > 0 && {
          web: {
            type: 'search',
            family_friendly: params.get('safesearch') !== 'off',
            results: found.map((hit) => ({
              type: 'search_result',
              title: hit.title,
              url: hit.url,
              description: hit.snippet,
              ...(hit.publishedAt && { page_age: naive(hit.publishedAt), age: new Date(hit.publishedAt).toDateString() }),
              language: 'en',
              family_friendly: true,
            })),
          },
        }),
      })
    },
    (request) => request.method === 'GET' && new URL(request.url).pathname === '/res/v1/web/search',
  )
}

/** Tavily: POST /search with a JSON body and Authorization: Bearer <key>. */
export function startFakeTavily(apiKey: string): FakeSearchEngine {
  return startEngine(
    async (request, hits) => {
      if (request.headers.get('authorization') !== `Bearer ${apiKey}`) return json({ detail: { error: 'Unauthorized: missing or invalid API key.' } }, 401)
      const body = (await request.json().catch(() => undefined)) as { query?: unknown; max_results?: number } | undefined
      if (typeof body?.query !== 'string') return json({ detail: { error: 'query is required' } }, 400)
      return json({
        query: body.query,
        answer: null,
        images: [],
        results: hits.slice(0, body.max_results ?? 5).map((hit, i) => ({
          title: hit.title,
          url: hit.url,
          content: hit.snippet,
          score: 1 - i / 10,
          raw_content: null,
          ...(hit.publishedAt && { published_date: new Date(hit.publishedAt).toUTCString() }),
        })),
        response_time: '0.42',
      })
    },
    (request) => request.method === 'POST' && new URL(request.url).pathname === '/search',
  )
}
