/**
 * CodeIndex.search on a process that does not own the organisation's index, in one test process: two instances of
 * the service sharing Redis, the owner listening on a socket. What the owner's search throws arrives as the same
 * AppError; what the owner answers that it cannot have meant is an upstream error; a refusing owner is searched around.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createSearchForwarding, type SearchForwarding } from '../../plugins/code-search/forwarding.ts'
import type { IndexOwnership } from '../../plugins/code-search/ownership.ts'
import { startFakeEmbeddingsApi, type FakeEmbeddingsApi } from '../fakes/embeddings-api.ts'
import { announceSkip, makeApp, redisUrl } from '../helpers.ts'
import { failure } from './suite.ts'

if (!redisUrl) announceSkip('code searches answered by the owner of the index', 'REDIS_URL')

/** An instance of the service on a socket of 127.0.0.1, advertised to the others as its index's address. */
async function listeningApp(env: Record<string, string>) {
  const t = await makeApp(env)
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => t.app.handle(request) })
  t.deps.codeIndex.forwarding!.listening('127.0.0.1', server.port!)
  return { t, server }
}

describe.skipIf(!redisUrl)('an error of the owner’s search', () => {
  // The owner's embeddings fail as scripted; the other process's always work, so a search it served itself would succeed.
  let ownerApi: FakeEmbeddingsApi
  let otherApi: FakeEmbeddingsApi
  let owner: Awaited<ReturnType<typeof listeningApp>>
  let other: Awaited<ReturnType<typeof listeningApp>>
  const orgId = `org-${crypto.randomUUID()}`

  beforeAll(async () => {
    ownerApi = startFakeEmbeddingsApi({ apiKey: 'sk-test' })
    otherApi = startFakeEmbeddingsApi({ apiKey: 'sk-test' })
    const secret = `forwarding-test-${crypto.randomUUID()}`
    const env = (api: FakeEmbeddingsApi) => ({
      REDIS_URL: redisUrl!,
      JWT_SECRET: secret,
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
      EMBEDDINGS_BASE_URL: api.url,
      EMBEDDINGS_API_KEY: 'sk-test',
    })
    owner = await listeningApp(env(ownerApi))
    other = await listeningApp(env(otherApi))
    // The first to search claims the index.
    expect(await owner.t.deps.codeIndex.search({ orgId }, { query: 'anything', mode: 'text' })).toEqual([])
  })

  afterAll(async () => {
    for (const side of [owner, other]) {
      side?.server.stop(true)
      await side?.t.close()
    }
    ownerApi?.close()
    otherApi?.close()
  })

  test('502 upstream_error: the same code, status and message on the calling side, and the other process embedded nothing', async () => {
    ownerApi.behaviour = { kind: 'malformed' }
    const here = await failure(owner.t.deps.codeIndex.search({ orgId }, { query: 'verify webhook signature', mode: 'vector' }))
    const calls = otherApi.calls
    const there = await failure(other.t.deps.codeIndex.search({ orgId }, { query: 'verify webhook signature', mode: 'vector' }))
    expect(here.code).toBe('upstream_error')
    expect({ code: there.code, status: there.status, message: there.message }).toEqual({ code: here.code, status: here.status, message: here.message })
    expect(otherApi.calls).toBe(calls)
  })

  test('503 unavailable keeps its Retry-After', async () => {
    ownerApi.behaviour = { kind: 'status', status: 429, retryAfter: '0' }
    const there = await failure(other.t.deps.codeIndex.search({ orgId }, { query: 'rate limited question', mode: 'hybrid' }))
    expect({ code: there.code, status: there.status }).toEqual({ code: 'unavailable', status: 503 })
    expect(there.options.headers).toEqual({ 'retry-after': '0' })
  })

  test('a query the search refuses is refused where it was made, as before, with the same 422', async () => {
    ownerApi.behaviour = { kind: 'vectors' }
    const there = await failure(other.t.deps.codeIndex.search({ orgId }, { query: 'x', limit: 0 }))
    const here = await failure(owner.t.deps.codeIndex.search({ orgId }, { query: 'x', limit: 0 }))
    expect({ code: there.code, message: there.message, errors: there.options.errors }).toEqual({
      code: here.code,
      message: here.message,
      errors: here.options.errors,
    })
  })

  test('once the owner answers again, its results come back whole', async () => {
    ownerApi.behaviour = { kind: 'vectors' }
    const calls = otherApi.calls
    expect(await other.t.deps.codeIndex.search({ orgId }, { query: 'a question neither process has embedded' })).toEqual([])
    expect(otherApi.calls).toBe(calls)
  })
})

/** A scripted owner: every request to it is answered `answer()`. */
function scriptedOwner(answer: () => Response) {
  const requests: { path: string; body: string }[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      requests.push({ path: new URL(request.url).pathname, body: await request.text() })
      return answer()
    },
  })
  const ownership: IndexOwnership = {
    advertise() {},
    locate: async () => ({ here: false, url: `http://127.0.0.1:${server.port}`, holder: `owner http://127.0.0.1:${server.port}` }),
    claim: async () => false,
    takeOver: async () => true,
    release: async () => {},
    onLost() {},
    close: async () => {},
  }
  const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent }
  const forwarding: SearchForwarding = createSearchForwarding({ ownership, secret: 'secret', logger: silent })
  return { forwarding, requests, stop: () => server.stop(true) }
}

const problem = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/problem+json', ...headers } })

describe('the answer of an owner, read on the calling side', () => {
  test('504 upstream_timeout and 422 validation_failed with its field problems arrive as themselves', async () => {
    let next = problem(504, { code: 'upstream_timeout', status: 504, detail: 'The embeddings endpoint did not answer within 30000 ms' })
    const owner = scriptedOwner(() => next)
    try {
      const timeout = await failure(owner.forwarding.search({ orgId: 'o' }, { query: 'q' }))
      expect({ code: timeout.code, status: timeout.status, message: timeout.message }).toEqual({
        code: 'upstream_timeout',
        status: 504,
        message: 'The embeddings endpoint did not answer within 30000 ms',
      })
      next = problem(422, { code: 'validation_failed', status: 422, detail: 'limit: too big', errors: [{ field: 'limit', message: 'too big' }] })
      const invalid = await failure(owner.forwarding.search({ orgId: 'o' }, { query: 'q' }))
      expect({ code: invalid.code, errors: invalid.options.errors }).toEqual({ code: 'validation_failed', errors: [{ field: 'limit', message: 'too big' }] })
      // What was sent: the scope and query, nothing else.
      expect(owner.requests.map((r) => r.path)).toEqual(['/internal/code-search/scoped-search', '/internal/code-search/scoped-search'])
      expect(JSON.parse(owner.requests[0]!.body)).toEqual({ scope: { orgId: 'o' }, query: { query: 'q' } })
    } finally {
      owner.stop()
    }
  })

  test('a code the owner cannot have meant (unknown, or not its status, or no problem at all) is 502 upstream_error', async () => {
    const answers = [
      problem(500, { code: 'no_such_code', detail: 'made up' }),
      problem(503, { code: 'upstream_timeout', detail: 'status does not match' }),
      new Response('<html>bad gateway</html>', { status: 502 }),
    ]
    const owner = scriptedOwner(() => answers.shift()!)
    try {
      for (let i = 0; i < 3; i++) {
        const error = await failure(owner.forwarding.search({ orgId: 'o' }, { query: 'q' }))
        expect({ code: error.code, status: error.status }).toEqual({ code: 'upstream_error', status: 502 })
      }
    } finally {
      owner.stop()
    }
  })

  test('an owner answering 404 (without the route, or refusing the signature) leaves the search to this process', async () => {
    const owner = scriptedOwner(() => problem(404, { code: 'not_found', status: 404, detail: 'No such route' }))
    try {
      expect(await owner.forwarding.search({ orgId: 'o' }, { query: 'q' })).toBeUndefined()
    } finally {
      owner.stop()
    }
  })
})
