import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/main/config.ts'
import { createEmbeddings } from '../../plugins/code-search/embeddings/index.ts'
import { createOpenAiEmbeddings, type OpenAiEmbeddingsOptions } from '../../plugins/code-search/embeddings/openai.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import { letterVector, startFakeEmbeddingsApi } from '../fakes/embeddings-api.ts'
import { tempDir } from '../helpers.ts'
import { corpus } from './fixtures.ts'
import { failure } from './suite.ts'

const api = startFakeEmbeddingsApi({ apiKey: 'sk-test' })
afterAll(() => api.close())
beforeEach(() => {
  api.behaviour = { kind: 'vectors' }
})

const adapter = (options: Partial<OpenAiEmbeddingsOptions> = {}) =>
  createOpenAiEmbeddings({ baseUrl: api.url, apiKey: 'sk-test', model: 'text-embedding-3-small', maxRetries: 0, ...options })

const norm = (v: Float32Array) => Math.hypot(...v)

describe('OpenAI-compatible embeddings adapter', () => {
  test('sends the model, float encoding and the dimensions asked for; places vectors by index; normalises them', async () => {
    const before = api.requests.length
    const vectors = await adapter({ dimensions: 28 }).embed(['abc', 'zzz 123'])
    const sent = JSON.parse(api.requests[before]!.body)
    expect(sent).toEqual({ model: 'text-embedding-3-small', input: ['abc', 'zzz 123'], encoding_format: 'float', dimensions: 28 })
    expect(api.requests[before]!.headers.authorization).toBe('Bearer sk-test')
    expect(vectors.map((v) => v.length)).toEqual([28, 28])
    for (const v of vectors) expect(norm(v)).toBeCloseTo(1, 5)
    // The fake answers in reverse order; the first vector is still the first text's.
    const expected = letterVector('abc', 28)
    const scale = Math.hypot(...expected)
    expect(Array.from(vectors[0]!).map((x) => Number(x.toFixed(5)))).toEqual(expected.map((x) => Number((x / scale).toFixed(5))))
  })

  test("texts go in batches of the configured size; the model's own size is used when none is asked for", async () => {
    const before = api.calls
    const vectors = await adapter({ batchSize: 2 }).embed(['a', 'b', 'c', 'd', 'e'])
    expect(api.calls - before).toBe(3)
    expect(vectors).toHaveLength(5)
    expect(vectors[0]!.length).toBe(32)
    expect(JSON.parse(api.requests.at(-1)!.body)).not.toHaveProperty('dimensions')
  })

  test('long texts are cut and empty ones sent as a space', async () => {
    await adapter({ maxInputChars: 10 }).embed(['x'.repeat(50), ''])
    expect(JSON.parse(api.requests.at(-1)!.body).input).toEqual(['x'.repeat(10), ' '])
  })

  test('a refused key is 502 upstream_error pointing at EMBEDDINGS_API_KEY', async () => {
    const error = await failure(adapter({ apiKey: 'sk-wrong' }).embed(['a']))
    expect(error).toMatchObject({ code: 'upstream_error', status: 502, options: { extensions: { provider: 'embeddings' } } })
    expect(error.message).toContain('401')
    expect(error.message).toContain('EMBEDDINGS_API_KEY')
  })

  test('429 is retried, then 503 unavailable passing Retry-After on', async () => {
    api.behaviour = { kind: 'status', status: 429, retryAfter: '0' }
    const before = api.calls
    const error = await failure(adapter({ maxRetries: 2 }).embed(['a']))
    expect(api.calls - before).toBe(3)
    expect(error).toMatchObject({ code: 'unavailable', options: { headers: { 'retry-after': '0' }, extensions: { provider: 'embeddings' } } })
  })

  test('a 500 is 502 upstream_error', async () => {
    api.behaviour = { kind: 'status', status: 500 }
    expect(await failure(adapter().embed(['a']))).toMatchObject({ code: 'upstream_error' })
  })

  test('an endpoint that never answers is 504 upstream_timeout', async () => {
    api.behaviour = { kind: 'silent' }
    expect(await failure(adapter({ timeoutMs: 200 }).embed(['a']))).toMatchObject({ code: 'upstream_timeout' })
  })

  test.each([
    ['malformed JSON', { kind: 'malformed' } as const, ''],
    ['one vector short', { kind: 'short' } as const, '1 vectors for 2 texts'],
  ])('%s is 502 upstream_error', async (_, behaviour, detail) => {
    api.behaviour = behaviour
    const error = await failure(adapter().embed(['a', 'b']))
    expect(error.code).toBe('upstream_error')
    expect(error.message).toContain(detail)
  })

  test('vectors of another size than EMBEDDINGS_DIMENSIONS are refused', async () => {
    const wrongSize = createOpenAiEmbeddings({
      baseUrl: api.url,
      apiKey: 'sk-test',
      model: 'm',
      dimensions: 28,
      maxRetries: 0,
      fetch: async (url, init) => {
        const body = JSON.parse(String(init!.body))
        return fetch(url, { ...init, body: JSON.stringify({ ...body, dimensions: 30 }) })
      },
    })
    expect((await failure(wrongSize.embed(['a']))).message).toContain('30-dimension vectors; EMBEDDINGS_DIMENSIONS is 28')
  })

  test('the index works end to end with the remote embeddings: vectors from the endpoint, search in every mode', async () => {
    const embeddings = adapter()
    const index = createCodeIndex({ embeddings })
    const before = api.texts
    const { chunks } = await index.indexFiles({ orgId: 'org-remote', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    expect(api.texts - before).toBe(chunks)
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const results = await index.search({ orgId: 'org-remote' }, { query: 'graceful shutdown SIGTERM', mode, limit: 3 })
      expect(results.length).toBeGreaterThan(0)
    }
    const [top] = await index.search({ orgId: 'org-remote' }, { query: 'graceful shutdown SIGTERM', mode: 'hybrid', limit: 3 })
    expect(top?.path).toBe('internal/server/graceful.go')
  })

  test('when the endpoint fails, hybrid search fails with its error while text search still answers', async () => {
    const index = createCodeIndex({ embeddings: adapter() })
    await index.indexFiles({ orgId: 'org-remote-down', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus.slice(0, 3) })
    api.behaviour = { kind: 'status', status: 503 }
    expect(await failure(index.search({ orgId: 'org-remote-down' }, { query: 'migrations' }))).toMatchObject({ code: 'upstream_error' })
    expect((await index.search({ orgId: 'org-remote-down' }, { query: 'migrations', mode: 'text' }))[0]?.path).toBe('src/db/migrations.ts')
  })
})

describe('embeddings configuration', () => {
  const configWith = (env: Record<string, string>) => {
    const dir = tempDir()
    try {
      return loadConfig({ DATA_DIR: dir.path, ...env }).codeSearch.embeddings
    } finally {
      dir.remove()
    }
  }

  test('no model: the offline hashed embeddings, 256 dimensions unless set', () => {
    expect(configWith({})).toEqual({ kind: 'hashed', dimensions: 256 })
    expect(createEmbeddings(configWith({ EMBEDDINGS_DIMENSIONS: '128' })).id).toBe('hashed-subwords-v1/128')
  })

  test("a model: the endpoint, falling back to the chat provider's URL and key", () => {
    expect(configWith({ EMBEDDINGS_MODEL: 'nomic-embed-text', OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' })).toEqual({
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: undefined,
      model: 'nomic-embed-text',
      dimensions: undefined,
    })
    expect(
      configWith({
        EMBEDDINGS_MODEL: 'm',
        EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1',
        EMBEDDINGS_API_KEY: 'k',
        OPENAI_API_KEY: 'other',
        EMBEDDINGS_DIMENSIONS: '64',
      }),
    ).toEqual({ kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'm', dimensions: 64 })
    expect(createEmbeddings(configWith({ EMBEDDINGS_MODEL: 'm', EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1' })).id).toBe('openai-compatible:m@127.0.0.1:9')
  })

  test.each([
    [{ EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1' }, 'EMBEDDINGS_BASE_URL is set but EMBEDDINGS_MODEL is not'],
    [{ EMBEDDINGS_MODEL: 'text-embedding-3-small' }, 'neither EMBEDDINGS_API_KEY nor OPENAI_API_KEY'],
    [{ EMBEDDINGS_DIMENSIONS: '8' }, 'EMBEDDINGS_DIMENSIONS must be between 16 and 4096'],
    [{ CODE_SEARCH_EXPANSION_MODEL: 'coder' }, 'CODE_SEARCH_EXPANSION_MODEL is set but no model provider is'],
    [
      { CODE_SEARCH_EXPANSION_MODEL: 'coder', OPENAI_API_KEY: 'k', CODE_SEARCH_EXPANSION_TIMEOUT_MS: '5' },
      'CODE_SEARCH_EXPANSION_TIMEOUT_MS must be between 100 and 60000',
    ],
  ])('%o is refused at start-up', (env, problem) => {
    expect(() => configWith(env)).toThrow(problem)
  })
})
