import { describe, expect, test } from 'bun:test'
import { create, insert, remove, save } from '@orama/orama'
import { EnumIndex, type SavedEnumIndex } from '../../plugins/code-search/index/enum-index.ts'
import { OrgIndex, type FileChunks } from '../../plugins/code-search/index/org-index.ts'
import { decodeSnapshot, encodeSnapshot } from '../../plugins/code-search/index/persistence.ts'

describe('enum index', () => {
  test('filters by eq, in and nin over ids inserted past its first room', () => {
    const index = new EnumIndex()
    for (let id = 1; id <= 3000; id++) index.insert(id % 3 === 0 ? 'python' : 'typescript', id)
    expect(index.filter({ eq: 'python' })).toEqual(Array.from({ length: 1000 }, (_, i) => (i + 1) * 3))
    expect(index.filter({ in: ['python', 'typescript', 'absent'] })).toHaveLength(3000)
    expect(index.filter({ nin: ['typescript'] })).toEqual(index.filter({ eq: 'python' }))
    expect(index.filter({ eq: 'absent' })).toEqual([])
    expect(index.getSize()).toBe(3000)
    expect(() => index.filter({ eq: 'a', in: ['b'] } as never)).toThrow('Invalid operation')
  })

  test('a removed document matches nothing; a value no document holds is forgotten and its number reused', () => {
    const index = new EnumIndex()
    index.insert('a.ts', 1)
    index.insert('a.ts', 2)
    index.insert('b.ts', 3)
    index.removeDocument(2, 'a.ts')
    expect(index.filter({ eq: 'a.ts' })).toEqual([1])
    index.removeDocument(3, 'b.ts')
    expect(index.filter({ eq: 'b.ts' })).toEqual([])
    expect(index.filter({ nin: ['a.ts'] })).toEqual([])
    // The id comes back with another value: only that value finds it.
    index.insert('c.ts', 3)
    index.insert('c.ts', 2)
    expect(index.filter({ eq: 'c.ts' })).toEqual([2, 3])
    expect(index.filter({ eq: 'b.ts' })).toEqual([])
    expect(index.toJSON()).toEqual({
      numberToDocumentId: [
        ['a.ts', [1]],
        ['c.ts', [2, 3]],
      ],
    })
    // Removing twice, or an id never inserted, changes nothing.
    index.removeDocument(3)
    index.removeDocument(3)
    index.removeDocument(99_999)
    expect(index.filter({ eq: 'c.ts' })).toEqual([2])
  })

  test("reads the index Orama's own enum field saves, and saves the same form", () => {
    const db = create({ schema: { path: 'enum' } as const })
    for (const [id, path] of [
      ['1', 'x.ts'],
      ['2', 'y.ts'],
      ['3', 'x.ts'],
    ] as const)
      insert(db, { id, path })
    remove(db, '2')
    const saved = (save(db).index as unknown as { indexes: { path: { node: SavedEnumIndex } } }).indexes.path.node
    const index = EnumIndex.fromJSON(JSON.parse(JSON.stringify(saved)))
    expect(index.filter({ eq: 'x.ts' })).toEqual([1, 3])
    expect(index.filter({ eq: 'y.ts' })).toEqual([])
    expect(index.toJSON()).toEqual(saved)
  })

  test('an index saved and restored filters the same after removals, slot reuse and more changes', () => {
    const chunk = (content: string) => ({ startLine: 1, endLine: 2, content, symbols: [], vector: Float32Array.of(1, 0) })
    const file = (repositoryId: string, path: string, language: string, ...contents: string[]): FileChunks => ({
      repositoryId,
      repositoryName: `acme/${repositoryId}`,
      path,
      language,
      chunks: contents.map(chunk),
    })
    const index = new OrgIndex()
    index.replaceFile(file('web', 'src/cache.ts', 'TypeScript', 'cache lookup', 'cache eviction'))
    index.replaceFile(file('api', 'lib/cache.py', 'Python', 'cache store'))
    index.replaceFile(file('api', 'lib/old.py', 'Python', 'cache old'))
    index.removePath('api', 'lib/old.py')
    // Takes the freed slot.
    index.replaceFile(file('web', 'src/new.ts', 'TypeScript', 'cache new'))
    const copy = decodeSnapshot(encodeSnapshot(index, { orgId: 'o', version: 1, embeddings: 'test', savedAt: 0 })).index
    const filters = [
      {},
      { repositoryIds: new Set(['api']) },
      { languages: new Set(['typescript']) },
      { pathPrefix: 'src/' },
      { repositoryIds: new Set(['web']), languages: new Set(['python']) },
    ]
    for (const filter of filters) expect(copy.searchText('cache', filter, 10)).toEqual(index.searchText('cache', filter, 10))
    expect(copy.searchText('cache', { repositoryIds: new Set(['api']) }, 10).map((hit) => copy.chunk(hit.slot)!.content)).toEqual(['cache store'])
    copy.removeRepository('web')
    copy.replaceFile(file('web', 'src/again.ts', 'TypeScript', 'cache again'))
    expect(copy.searchText('cache', { languages: new Set(['typescript']) }, 10).map((hit) => copy.chunk(hit.slot)!.content)).toEqual(['cache again'])
  })
})
