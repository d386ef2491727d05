import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { OrgIndex, type FileChunks } from '../../plugins/code-search/index/org-index.ts'
import { runToEnd } from '../../plugins/code-search/index.ts'

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'golf', 'hotel', 'kilo', 'lima']
const PATHS = ['a.ts', 'b.ts', 'c.ts', 'd.ts']

function file(path: string, contents: readonly string[]): FileChunks {
  return {
    repositoryId: 'r',
    repositoryName: 'acme/r',
    path,
    language: 'TypeScript',
    chunks: contents.map((content, i) => ({ startLine: i * 10 + 1, endLine: i * 10 + 5, content, symbols: [], vector: Float32Array.of(1, i, 0) })),
  }
}

const sweep = (index: OrgIndex) => runToEnd(index.sweepRemoved())

describe("a removed chunk's slot", () => {
  test('is not taken again while its postings may still hold the old chunk, so a change sweeps no list at once', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', ['alpha bravo', 'alpha charlie']))
    index.replaceFile(file('a.ts', ['delta']))
    // The old chunks' entries wait for the sweep; reads skip them meanwhile.
    expect(index.sweepPending).toBe(true)
    expect(index.vectors!.slots).toBe(3)
    index.replaceFile(file('b.ts', ['golf', 'hotel']))
    expect(index.vectors!.slots).toBe(5)
    expect(index.searchText('alpha', {}, 10)).toEqual([])
  })

  test('is taken again once the sweep has dropped its entries', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', ['alpha bravo', 'alpha charlie']))
    index.replaceFile(file('a.ts', ['delta']))
    sweep(index)
    expect(index.sweepPending).toBe(false)
    index.replaceFile(file('b.ts', ['golf', 'hotel']))
    expect(index.vectors!.slots).toBe(3)
    const found = (word: string) => index.searchText(word, {}, 10).map((hit) => index.chunk(hit.slot)!.content)
    expect(found('alpha')).toEqual([])
    expect(found('golf')).toEqual(['golf'])
    expect(found('hotel')).toEqual(['hotel'])
  })

  test('once swept, is taken by the next file stored, even one replacing chunks of its own', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', ['alpha']))
    index.replaceFile(file('b.ts', ['bravo', 'charlie']))
    index.removePath('r', 'b.ts')
    sweep(index)
    // a.ts's old chunk waits for the next sweep; b.ts's swept slots are taken.
    index.replaceFile(file('a.ts', ['delta', 'golf']))
    expect(index.vectors!.slots).toBe(3)
    expect(index.sweepPending).toBe(true)
    expect(index.searchText('alpha', {}, 10)).toEqual([])
  })

  test('whatever the order of changes and sweeps, a word finds exactly the chunks holding it now', () => {
    const content = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 }).map((words) => words.join(' '))
    const step = fc.oneof(
      fc.record({ kind: fc.constant('replace' as const), path: fc.constantFrom(...PATHS), contents: fc.array(content, { maxLength: 3 }) }),
      fc.record({ kind: fc.constant('remove' as const), path: fc.constantFrom(...PATHS) }),
      fc.record({ kind: fc.constant('sweep' as const) }),
    )
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => {
        const index = new OrgIndex()
        const held = new Map<string, readonly string[]>()
        for (const change of steps) {
          if (change.kind === 'replace') {
            index.replaceFile(file(change.path, change.contents))
            held.set(change.path, change.contents)
          } else if (change.kind === 'remove') {
            index.removePath('r', change.path)
            held.delete(change.path)
          } else sweep(index)
          for (const word of WORDS) {
            const found = index
              .searchText(word, {}, 100)
              .map((hit) => `${index.chunk(hit.slot)!.path}:${index.chunk(hit.slot)!.content}`)
              .sort()
            const expected = [...held].flatMap(([path, contents]) => contents.filter((c) => c.split(' ').includes(word)).map((c) => `${path}:${c}`)).sort()
            expect(found).toEqual(expected)
          }
        }
        const live = [...held.values()].reduce((sum, contents) => sum + contents.length, 0)
        expect(index.chunkCount).toBe(live)
      }),
      { numRuns: 200 },
    )
  })
})
