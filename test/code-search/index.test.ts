import { describe, expect, test } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { corpus } from './fixtures.ts'

const newIndex = () => createCodeIndex({ embeddings: createHashedEmbeddings() })

const toolsRepo: RepositoryFile[] = [
  {
    path: 'src/auth/session.go',
    content: 'package auth\n\n// VerifySession checks the session cookie signature.\nfunc VerifySession(cookie string) bool {\n\treturn len(cookie) > 0\n}\n',
  },
  { path: 'tools/verify.py', content: 'def verify_signature(payload):\n    """Verify the payload signature."""\n    return bool(payload)\n' },
]

async function twoRepositories() {
  const index = newIndex()
  await index.indexFiles({ orgId: 'org-a', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
  await index.indexFiles({ orgId: 'org-a', repositoryId: 'tools', repositoryName: 'acme/tools', files: toolsRepo })
  return index
}

const pathsOf = (results: { repositoryId: string; path: string }[]) => results.map((r) => `${r.repositoryId}:${r.path}`)

describe('filters', () => {
  test('repositoryIds keeps to the named repositories, in every mode', async () => {
    const index = await twoRepositories()
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const all = await index.search({ orgId: 'org-a' }, { query: 'verify signature', mode, limit: 20 })
      expect(new Set(all.map((r) => r.repositoryId))).toEqual(new Set(['shop', 'tools']))
      const tools = await index.search({ orgId: 'org-a' }, { query: 'verify signature', mode, limit: 20, repositoryIds: ['tools'] })
      expect(tools.length).toBeGreaterThan(0)
      expect(tools.every((r) => r.repositoryId === 'tools' && r.repositoryName === 'acme/tools')).toBe(true)
    }
  })

  test('languages compares names case-insensitively; the language comes from the extension when the importer gives none', async () => {
    const index = await twoRepositories()
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const results = await index.search({ orgId: 'org-a' }, { query: 'verify signature', mode, limit: 20, languages: ['go', 'PYTHON'] })
      expect(results.every((r) => r.language === 'Go' || r.language === 'Python')).toBe(true)
      expect(pathsOf(results)).toContain('tools:tools/verify.py')
    }
    const [go] = await index.search({ orgId: 'org-a' }, { query: 'VerifySession', languages: ['Go'], repositoryIds: ['tools'] })
    expect(go).toMatchObject({ path: 'src/auth/session.go', language: 'Go' })
  })

  test('pathPrefix keeps to paths under it; a leading ./ is ignored; a prefix no path has answers nothing', async () => {
    const index = await twoRepositories()
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const results = await index.search({ orgId: 'org-a' }, { query: 'verify signature token', mode, limit: 20, pathPrefix: './src/auth/' })
      expect(results.every((r) => r.path.startsWith('src/auth/'))).toBe(true)
      expect(pathsOf(results)).toContain('shop:src/auth/jwt.ts')
      expect(await index.search({ orgId: 'org-a' }, { query: 'verify', mode, pathPrefix: 'nowhere/' })).toEqual([])
    }
  })

  test('filters combine', async () => {
    const index = await twoRepositories()
    const results = await index.search(
      { orgId: 'org-a' },
      { query: 'verify', pathPrefix: 'src/', languages: ['TypeScript'], repositoryIds: ['shop', 'tools'], limit: 50 },
    )
    expect(results.length).toBeGreaterThan(0)
    expect(results.every((r) => r.path.startsWith('src/') && r.language === 'TypeScript')).toBe(true)
  })
})

describe('changes', () => {
  test('indexing a path again replaces its old chunks', async () => {
    const index = newIndex()
    const base = { orgId: 'org-change', repositoryId: 'r', repositoryName: 'acme/r' }
    await index.indexFiles({ ...base, files: [{ path: 'src/a.ts', content: 'export function oldHelper() {\n  return "walrus"\n}\n' }] })
    expect(await index.search({ orgId: 'org-change' }, { query: 'walrus', mode: 'text' })).toHaveLength(1)
    await index.indexFiles({ ...base, files: [{ path: 'src/a.ts', content: 'export function newHelper() {\n  return "narwhal"\n}\n' }] })
    expect(await index.search({ orgId: 'org-change' }, { query: 'walrus', mode: 'text' })).toEqual([])
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const results = await index.search({ orgId: 'org-change' }, { query: 'narwhal newHelper', mode })
      expect(results).toHaveLength(1)
      expect(results[0]!.snippet).toContain('newHelper')
    }
  })

  test('removedPaths removes those files and nothing else', async () => {
    const index = newIndex()
    const base = { orgId: 'org-remove', repositoryId: 'shop', repositoryName: 'acme/shop' }
    await index.indexFiles({ ...base, files: corpus })
    const result = await index.indexFiles({ ...base, files: [], removedPaths: ['src/http/retry.ts', 'app/utils/slugify.py'] })
    expect(result).toEqual({ files: 0, chunks: 0 })
    const paths = new Set((await index.search({ orgId: 'org-remove' }, { query: 'retry backoff slugify title jwt', limit: 50 })).map((r) => r.path))
    expect(paths.has('src/http/retry.ts')).toBe(false)
    expect(paths.has('app/utils/slugify.py')).toBe(false)
    expect(paths.has('src/auth/jwt.ts')).toBe(true)
  })

  test('a file that no longer gives chunks (now binary) loses its old ones', async () => {
    const index = newIndex()
    const base = { orgId: 'org-binary', repositoryId: 'r', repositoryName: 'acme/r' }
    await index.indexFiles({ ...base, files: [{ path: 'asset.dat', content: 'platypus text' }] })
    expect(await index.indexFiles({ ...base, files: [{ path: 'asset.dat', content: 'platypus\0\0' }] })).toEqual({ files: 1, chunks: 0 })
    expect(await index.search({ orgId: 'org-binary' }, { query: 'platypus' })).toEqual([])
  })

  test('removeRepository removes only that repository', async () => {
    const index = await twoRepositories()
    await index.removeRepository('org-a', 'shop')
    const results = await index.search({ orgId: 'org-a' }, { query: 'verify signature', limit: 50 })
    expect(results.length).toBeGreaterThan(0)
    expect(results.every((r) => r.repositoryId === 'tools')).toBe(true)
  })

  test('progress is reported as batches land, and files arrive from an async iterable', async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), embedBatchSize: 4 })
    async function* files() {
      for (const file of corpus) yield file
    }
    const progress: { filesIndexed: number; chunksIndexed: number }[] = []
    const result = await index.indexFiles({
      orgId: 'org-progress',
      repositoryId: 'r',
      repositoryName: 'r',
      files: files(),
      onProgress: (p) => progress.push(p),
    })
    expect(progress.length).toBeGreaterThan(2)
    expect(progress.at(-1)).toEqual({ filesIndexed: result.files, chunksIndexed: result.chunks })
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.chunksIndexed).toBeGreaterThan(progress[i - 1]!.chunksIndexed)
  })

  test("an aborted import stops with the signal's reason", async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), embedBatchSize: 1 })
    const controller = new AbortController()
    const run = index.indexFiles({
      orgId: 'org-abort',
      repositoryId: 'r',
      repositoryName: 'r',
      files: corpus,
      signal: controller.signal,
      onProgress: () => controller.abort(new Error('import cancelled')),
    })
    await expect(run).rejects.toThrow('import cancelled')
  })

  test('paths that leave the repository are refused', async () => {
    const index = newIndex()
    for (const path of ['../etc/passwd', '/etc/passwd', 'a/../../b', ''])
      await expect(index.indexFiles({ orgId: 'o', repositoryId: 'r', repositoryName: 'r', files: [{ path, content: 'x' }] })).rejects.toThrow(
        'not a relative repository path',
      )
  })
})

describe('organisations', () => {
  test("a search only ever sees its own organisation's repositories", async () => {
    const index = newIndex()
    await index.indexFiles({
      orgId: 'org-one',
      repositoryId: 'shared-id',
      repositoryName: 'one/app',
      files: [{ path: 'secret.ts', content: 'export const launchCode = "aardvark"\n' }],
    })
    await index.indexFiles({
      orgId: 'org-two',
      repositoryId: 'shared-id',
      repositoryName: 'two/app',
      files: [{ path: 'public.ts', content: 'export const greeting = "hello"\n' }],
    })
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      expect(await index.search({ orgId: 'org-two' }, { query: 'aardvark launchCode', mode, limit: 50 })).not.toContainEqual(
        expect.objectContaining({ path: 'secret.ts' }),
      )
      // Naming the other organisation's repository id does not reach it either.
      const named = await index.search({ orgId: 'org-two' }, { query: 'aardvark launchCode', mode, repositoryIds: ['shared-id'], limit: 50 })
      expect(named.every((r) => r.repositoryName === 'two/app')).toBe(true)
      expect(await index.search({ orgId: 'org-three' }, { query: 'aardvark', mode })).toEqual([])
    }
    expect((await index.search({ orgId: 'org-one' }, { query: 'aardvark', mode: 'text' }))[0]).toMatchObject({ path: 'secret.ts', repositoryName: 'one/app' })
  })
})

describe('query validation for direct callers (the chat tool, agents)', () => {
  test.each([
    ['a blank query', { query: '   ' }, 'query'],
    ['a query over 500 characters', { query: 'x'.repeat(501) }, 'query'],
    ['limit 0', { query: 'x', limit: 0 }, 'limit'],
    ['limit 51', { query: 'x', limit: 51 }, 'limit'],
    ['an unknown mode', { query: 'x', mode: 'fuzzy' as never }, 'mode'],
    ['a blank language', { query: 'x', languages: [' '] }, 'languages'],
  ])('%s is validation_failed naming %s', async (_, query, field) => {
    const error = await newIndex()
      .search({ orgId: 'o' }, query)
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'validation_failed', options: { errors: [{ field }] } })
  })

  test('empty filter lists do not filter', async () => {
    const index = await twoRepositories()
    expect((await index.search({ orgId: 'org-a' }, { query: 'verify', repositoryIds: [], languages: [] })).length).toBeGreaterThan(0)
  })
})
