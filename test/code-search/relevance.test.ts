import { beforeAll, describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import { corpus, identifierQueries, labelledQueries } from './fixtures.ts'

const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
const org = { orgId: 'org-relevance' }

beforeAll(async () => {
  expect(await index.indexFiles({ orgId: org.orgId, repositoryId: 'repo-shop', repositoryName: 'acme/shop', files: corpus })).toEqual({
    files: corpus.length,
    chunks: expect.any(Number),
  })
})

describe.each(['hybrid', 'text', 'vector'] as const)('%s search', (mode) => {
  test.each(labelledQueries)('"$query" finds $expected in the top 3', async ({ query, expected }) => {
    const results = await index.search(org, { query, mode, limit: 3 })
    expect(results.map((r) => r.path)).toContain(expected)
  })

  test.each(identifierQueries)('"$query" (another spelling) finds $expected first', async ({ query, expected }) => {
    const results = await index.search(org, { query, mode, limit: 3 })
    expect(results[0]?.path).toBe(expected)
  })

  test('results are ranked by score and carry the chunk, its lines and a snippet', async () => {
    const results = await index.search(org, { query: 'compute tax', mode })
    expect(results.length).toBeGreaterThan(0)
    for (let i = 1; i < results.length; i++) expect(results[i]!.score).toBeLessThanOrEqual(results[i - 1]!.score)
    const first = results[0]!
    expect(first).toMatchObject({ repositoryId: 'repo-shop', repositoryName: 'acme/shop', path: 'app/billing/invoice.py', language: 'Python' })
    const file = corpus.find((f) => f.path === first.path)!.content.split('\n')
    expect(first.startLine).toBeGreaterThanOrEqual(1)
    expect(first.endLine).toBeLessThanOrEqual(file.length)
    expect(file.slice(first.startLine - 1, first.endLine).join('\n')).toContain('def compute_tax')
    expect(first.snippet).toContain('<mark>')
  })
})

test('hybrid scores: 1.6 means first in both lists, in the best-matching file', async () => {
  const [first] = await index.search(org, { query: 'graceful shutdown SIGTERM' })
  expect(first).toMatchObject({ path: 'internal/server/graceful.go', score: 1.6 })
})

test('text search matches whole words only; the vectors find misspelt words by their trigrams', async () => {
  for (const query of ['slugfy', 'migraton', 'grecefull shutdwn']) expect(await index.search(org, { query, mode: 'text' })).toEqual([])
  for (const [query, expected] of [
    ['slugfy', 'app/utils/slugify.py'],
    ['migraton', 'src/db/migrations.ts'],
    ['grecefull shutdwn', 'internal/server/graceful.go'],
  ] as const) {
    const results = await index.search(org, { query, mode: 'vector', limit: 3 })
    expect(results.map((r) => r.path)).toContain(expected)
  }
})

test('limit bounds the answer', async () => {
  expect(await index.search(org, { query: 'token', limit: 2 })).toHaveLength(2)
})
