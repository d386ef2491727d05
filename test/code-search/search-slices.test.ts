import { describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { nextTurn } from '../../src/time-slices.ts'
import { corpus } from './fixtures.ts'

// Slices of 0 ms: a search gives way at every step, so other work always runs in between.
const newIndex = () => createCodeIndex({ embeddings: createHashedEmbeddings(), searchSliceMs: 0 })

const verifierFiles = (count: number): RepositoryFile[] =>
  Array.from({ length: count }, (_, n) => ({
    path: `verify/check${n}.ts`,
    content: `export function verifySignature${n}(token: string) {\n  return token.length > ${n}\n}\n`,
  }))

describe('a search that gives way', () => {
  test('answers the same as one that does not', async () => {
    const sliced = newIndex()
    const whole = createCodeIndex({ embeddings: createHashedEmbeddings(), searchSliceMs: Infinity })
    for (const index of [sliced, whole]) await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    for (const mode of ['hybrid', 'text', 'vector'] as const)
      for (const query of ['verify signature', 'session cookie', 'parse config file'])
        expect(await sliced.search({ orgId: 'org' }, { query, mode, limit: 20 })).toEqual(await whole.search({ orgId: 'org' }, { query, mode, limit: 20 }))
  })

  test('a repository removed between its steps is not in the answer, and nothing fails', async () => {
    const index = newIndex()
    await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles(40) })
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const before = await index.search({ orgId: 'org' }, { query: 'verify signature token', mode, limit: 50 })
      expect(before.some((r) => r.repositoryId === 'verifiers')).toBe(true)
      const searching = index.search({ orgId: 'org' }, { query: 'verify signature token', mode, limit: 50 })
      // The search's first step is done and it gave way.
      await nextTurn()
      await index.removeRepository('org', 'verifiers')
      const results = await searching
      expect(results.length).toBeGreaterThan(0)
      expect(results.filter((r) => r.repositoryId === 'verifiers')).toEqual([])
      await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles(40) })
    }
  })

  test('files replaced between its steps, in the slots of the chunks they replace, are left out of its answer, never named as what they no longer are', async () => {
    // Indexing in one slice: all of it is stored before the search's next step.
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), searchSliceMs: 0, indexSliceMs: Infinity })
    await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles(40) })
    for (const mode of ['hybrid', 'text', 'vector'] as const) {
      const searching = index.search({ orgId: 'org' }, { query: 'verify signature token', mode, limit: 50 })
      await nextTurn()
      // The same paths with other code: the removed chunks' slots are reused.
      const replaced = verifierFiles(40).map((file) => ({
        ...file,
        content: file.content.replace('verifySignature', `renderBanner${mode}`).replace('token.length', 'banner.width'),
      }))
      await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: replaced })
      const results = await searching
      expect(results.length).toBeGreaterThan(0)
      expect(results.filter((r) => r.repositoryId === 'verifiers')).toEqual([])
      // The next search ranks them as they now are.
      const now = await index.search({ orgId: 'org' }, { query: `render banner ${mode} width`, mode, limit: 50 })
      expect(now.filter((r) => r.repositoryId === 'verifiers')).toHaveLength(40)
      expect(now.filter((r) => r.repositoryId === 'verifiers').every((r) => r.snippet.includes('banner'))).toBe(true)
      await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles(40) })
    }
  })

  test('searches while a large repository is removed a few files at a time answer throughout, and without it once it is gone', async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), searchSliceMs: 0, indexSliceMs: 0 })
    await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles(400) })
    const removing = index.removeRepository('org', 'verifiers')
    const known = new Set([...corpus, ...verifierFiles(400)].map((file) => file.path))
    // Searches while the removal gives way between its changes: each answers with chunks the index held.
    let searched = 0
    for (let done = false; !done; ) {
      const results = await index.search({ orgId: 'org' }, { query: 'verify signature token', mode: 'hybrid', limit: 50 })
      expect(results.length).toBeGreaterThan(0)
      expect(results.filter((r) => !known.has(r.path))).toEqual([])
      searched++
      done = await Promise.race([removing.then(() => true), nextTurn().then(() => false)])
    }
    expect(searched).toBeGreaterThan(1)
    expect(
      (await index.search({ orgId: 'org' }, { query: 'verify signature token', mode: 'hybrid', limit: 50 })).filter((r) => r.repositoryId === 'verifiers'),
    ).toEqual([])
  })
})
