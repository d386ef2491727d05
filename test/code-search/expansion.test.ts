import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createQueryExpander, snippetFromAnswer } from '../../plugins/code-search/expansion.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { createOpenAiProvider } from '../../src/llm/provider.ts'
import { queryUsage } from '../../src/usage/meter.ts'
import { bearer, makeApp, userWithRole } from '../helpers.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'

// The question's words appear nowhere in the method that answers it (`eject`), and plenty in its neighbours.
const files: RepositoryFile[] = [
  {
    path: 'lib/core/InterceptorManager.js',
    content: [
      'class InterceptorManager {',
      '  constructor() {',
      '    this.handlers = []',
      '  }',
      '',
      '  use(fulfilled, rejected, options) {',
      '    this.handlers.push({ fulfilled, rejected, synchronous: options ? options.synchronous : false })',
      '    return this.handlers.length - 1',
      '  }',
      '',
      '  eject(id) {',
      '    if (this.handlers[id]) {',
      '      this.handlers[id] = null',
      '    }',
      '  }',
      '',
      '  forEach(fn) {',
      '    this.handlers.forEach((h) => { if (h !== null) fn(h) })',
      '  }',
      '}',
    ].join('\n'),
  },
  {
    path: 'lib/core/Axios.js',
    content: [
      'function request(config) {',
      '  const chain = []',
      '  this.interceptors.request.forEach((interceptor) => chain.unshift(interceptor.fulfilled, interceptor.rejected))',
      '  this.interceptors.response.forEach((interceptor) => chain.push(interceptor.fulfilled, interceptor.rejected))',
      '  return chain',
      '}',
    ].join('\n'),
  },
  {
    path: 'lib/helpers/stack.js',
    content: [
      'export function removeFromStack(stack, item) {',
      '  const at = stack.indexOf(item)',
      '  if (at >= 0) stack.splice(at, 1)',
      '  return stack',
      '}',
    ].join('\n'),
  },
]
const QUESTION = 'Remove an interceptor from the stack'
const ANSWER_LINE = 11

const fake = startFakeOpenAi()
afterAll(() => fake.close())

const provider = createOpenAiProvider({ baseUrl: fake.baseUrl, apiKey: 'test', maxRetries: 0, timeoutMs: 5000, idleMs: 5000 })

async function indexWith(expandQuery?: (query: string) => Promise<string | undefined>) {
  const index = createCodeIndex({ embeddings: createHashedEmbeddings(), expandQuery })
  await index.indexFiles({ orgId: 'org', repositoryId: 'r', repositoryName: 'acme/axios', files })
  return index
}

const holdsAnswer = (r: { path: string; startLine: number; endLine: number }) =>
  r.path === 'lib/core/InterceptorManager.js' && r.startLine <= ANSWER_LINE && r.endLine >= ANSWER_LINE

const defaultFallback = fake.fallback
beforeEach(() => {
  fake.fallback = defaultFallback
  fake.queue = []
  fake.completions.length = 0
})

describe('questions written as code by a model', () => {
  test("the method whose words the question never uses comes first only with the model's code", async () => {
    const plain = await indexWith()
    const without = await plain.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })
    expect(holdsAnswer(without[0]!)).toBe(false)

    fake.queue.push({ text: '```js\neject(id) {\n  if (this.handlers[id]) this.handlers[id] = null\n}\n```' })
    const expanded = await indexWith(createQueryExpander({ provider, model: 'coder', timeoutMs: 5000 }))
    const withCode = await expanded.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })
    expect(holdsAnswer(withCode[0]!)).toBe(true)
    for (const r of withCode) expect(r.score).toBeLessThanOrEqual(1)

    // What the provider was asked: the question, for code only, deterministic and short.
    expect(fake.completions).toHaveLength(1)
    const asked = fake.completions[0]!
    expect(asked.model).toBe('coder')
    expect(asked.temperature).toBe(0)
    expect(asked.max_tokens).toBe(200)
    expect(asked.messages.at(-1)).toEqual({ role: 'user', content: QUESTION })
    await plain.close()
    await expanded.close()
  })

  test('text and vector modes search the code too', async () => {
    const plain = await indexWith()
    const index = await indexWith(createQueryExpander({ provider, model: 'coder', timeoutMs: 5000 }))
    fake.fallback = () => ({ text: 'eject(id) { this.handlers[id] = null }' })
    const rankOfAnswer = async (searched: typeof index, mode: 'text' | 'vector') =>
      (await searched.search({ orgId: 'org' }, { query: QUESTION, mode, limit: 10 })).findIndex(holdsAnswer) + 1
    expect(await rankOfAnswer(index, 'text')).toBe(1)
    expect(await rankOfAnswer(plain, 'text')).not.toBe(1)
    // The question's vector is nearest the stack helper; the code's moves the method up.
    expect(await rankOfAnswer(index, 'vector')).toBeLessThan(await rankOfAnswer(plain, 'vector'))
    // One model call for both searches: the code for a question is remembered.
    expect(fake.completions).toHaveLength(1)
    await index.close()
    await plain.close()
  })

  test('expand: false searches the question alone, without asking the model', async () => {
    const index = await indexWith(createQueryExpander({ provider, model: 'coder', timeoutMs: 5000 }))
    const plain = await indexWith()
    const alone = await index.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5, expand: false })
    expect(alone).toEqual(await plain.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 }))
    expect(fake.completions).toHaveLength(0)
    expect(index.search({ orgId: 'org' }, { query: QUESTION, expand: 'yes' as unknown as boolean })).rejects.toThrow('expand: must be true or false')
    await index.close()
    await plain.close()
  })

  test('a failing or slow model leaves the search as it is without one, and is asked again next time', async () => {
    const warnings: string[] = []
    const logger = { debug() {}, info() {}, warn: (msg: string) => void warnings.push(msg), error() {}, child: () => logger }
    const plain = await indexWith()
    const expected = await plain.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })

    const failing = await indexWith(createQueryExpander({ provider, model: 'coder', timeoutMs: 5000, logger }))
    fake.queue.push({ status: 500 })
    expect(await failing.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })).toEqual(expected)
    fake.queue.push({ text: 'eject(id) { this.handlers[id] = null }' })
    const [first] = await failing.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })
    expect(holdsAnswer(first!)).toBe(true)

    const slow = await indexWith(createQueryExpander({ provider, model: 'coder', timeoutMs: 150, logger }))
    fake.queue.push({ text: 'eject(id) { this.handlers[id] = null }', delayMs: 100 })
    const started = performance.now()
    expect(await slow.search({ orgId: 'org' }, { query: QUESTION, mode: 'hybrid', limit: 5 })).toEqual(expected)
    expect(performance.now() - started).toBeLessThan(2000)
    expect(warnings.some((w) => w.includes('did not write code'))).toBe(true)
    expect(warnings.some((w) => w.includes('did not answer in time'))).toBe(true)
    for (const index of [plain, failing, slow]) await index.close()
  })

  test('the code inside a fence is taken, prose around it left out', () => {
    expect(snippetFromAnswer('Here you go:\n```ts\nconst a = 1\n```\nHope it helps')).toBe('const a = 1')
    expect(snippetFromAnswer('  eject(id) {}  ')).toBe('eject(id) {}')
    expect(snippetFromAnswer('x'.repeat(5000))).toHaveLength(1500)
  })
})

describe('POST /api/search with CODE_SEARCH_EXPANSION_MODEL', async () => {
  const t = await makeApp({ OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test', CODE_SEARCH_EXPANSION_MODEL: 'coder' })
  const member = await userWithRole(t, 'member')
  afterAll(() => t.close())
  await t.deps.codeIndex.indexFiles({ orgId: member.user.orgId, repositoryId: 'r', repositoryName: 'acme/axios', files })
  const search = (body: unknown) => t.send('POST', '/api/search', body, bearer(member.token))

  test('the configured model writes the code and the route answers with the method it names', async () => {
    fake.queue.push({ text: 'eject(id) { this.handlers[id] = null }', usage: { prompt_tokens: 61, completion_tokens: 17 } })
    const res = await search({ query: QUESTION, limit: 3 })
    expect(res.status).toBe(200)
    expect(holdsAnswer((await res.json()).results[0])).toBe(true)
    expect(fake.completions.map((c) => c.model)).toEqual(['coder'])
    // The model's tokens are the searching user's, as chat tokens of the expansion model; a repeated question costs none.
    expect((await search({ query: QUESTION, limit: 3 })).status).toBe(200)
    await t.deps.meter.flush()
    const usage = await queryUsage(t.deps.db, { orgId: member.user.orgId, userId: member.user.id, from: 0, to: Date.now() + 1000, bucket: 'day' })
    expect(usage.totals).toEqual(
      expect.arrayContaining([
        { kind: 'chat_tokens_in', model: 'coder', quantity: 61 },
        { kind: 'chat_tokens_out', model: 'coder', quantity: 17 },
        { kind: 'search', model: null, quantity: 2 },
      ]),
    )
    expect(usage.totals).toHaveLength(3)

    // A model that refuses the request (and its one retry) spent nothing: no tokens are counted for it.
    fake.queue.push({ status: 500 }, { status: 500 })
    expect((await search({ query: `${QUESTION} once more`, limit: 3 })).status).toBe(200)
    await t.deps.meter.flush()
    const after = await queryUsage(t.deps.db, { orgId: member.user.orgId, userId: member.user.id, from: 0, to: Date.now() + 1000, bucket: 'day' })
    expect(after.totals.filter((row: { kind: string }) => row.kind !== 'search')).toEqual(usage.totals.filter((row: { kind: string }) => row.kind !== 'search'))
  })

  test('expand: false in the body searches the question alone; a wrong type is a 422 naming the field', async () => {
    const res = await search({ query: `${QUESTION} again`, expand: false })
    expect(res.status).toBe(200)
    expect(fake.completions).toHaveLength(0)
    const bad = await search({ query: QUESTION, expand: 'yes' })
    expect(bad.status).toBe(422)
    expect(JSON.stringify(await bad.json())).toContain('expand')
  })
})
