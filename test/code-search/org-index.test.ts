import { describe, expect, test } from 'bun:test'
import { OrgIndex, type FileChunks } from '../../plugins/code-search/index/org-index.ts'
import { decodeSnapshot, encodeSnapshot } from '../../plugins/code-search/index/persistence.ts'

const vector = (...values: number[]) => Float32Array.from(values)

function file(path: string, ...contents: string[]): FileChunks {
  return {
    repositoryId: 'r',
    repositoryName: 'acme/r',
    path,
    language: 'TypeScript',
    chunks: contents.map((content, i) => ({ startLine: i * 10 + 1, endLine: i * 10 + 5, content, symbols: [], vector: vector(1, i, 0) })),
  }
}

const ranked = (index: OrgIndex, query: string) => index.searchText(query, {}, 10).map((hit) => index.chunk(hit.slot)!.content)

describe('full-text index', () => {
  test('term frequency counts: the chunk saying a word more often ranks first', () => {
    const index = new OrgIndex()
    index.replaceFile(file('once.ts', 'cache store store store'))
    index.replaceFile(file('thrice.ts', 'cache cache cache store'))
    expect(ranked(index, 'cache')).toEqual(['cache cache cache store', 'cache store store store'])
    expect(ranked(index, 'store')).toEqual(['cache store store store', 'cache cache cache store'])
  })

  test('a rarer word weighs more than a common one', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'common thing'))
    index.replaceFile(file('b.ts', 'common other'))
    index.replaceFile(file('c.ts', 'common rare'))
    expect(ranked(index, 'common rare')[0]).toBe('common rare')
  })

  test('words that are also Object.prototype members are ordinary words', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'class A { constructor() { this.valueOf = 1 } }'))
    index.replaceFile(file('b.ts', 'no such word here'))
    expect(ranked(index, 'constructor')).toEqual(['class A { constructor() { this.valueOf = 1 } }'])
  })

  test('replacing a file removes every posting of its old chunks', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'alpha beta', 'alpha gamma'))
    expect(index.chunkCount).toBe(2)
    index.replaceFile(file('a.ts', 'delta'))
    expect(index.chunkCount).toBe(1)
    expect(ranked(index, 'alpha beta gamma')).toEqual([])
    expect(ranked(index, 'delta')).toEqual(['delta'])
  })

  test('the vector of a removed chunk is never found', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'alpha'))
    index.replaceFile(file('b.ts', 'beta'))
    index.removePath('r', 'a.ts')
    expect(index.searchVector(vector(1, 0, 0), {}, 5).map((hit) => index.chunk(hit.slot)!.path)).toEqual(['b.ts'])
  })

  test("a vector of another length than the index's is refused", () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'alpha'))
    expect(() =>
      index.replaceFile({ ...file('b.ts', 'beta'), chunks: [{ startLine: 1, endLine: 1, content: 'beta', symbols: [], vector: vector(1, 0) }] }),
    ).toThrow('2 dimensions')
    // Nothing changed: not the refused file, not the file it would have replaced.
    expect(ranked(index, 'beta')).toEqual([])
    expect(() =>
      index.replaceFile({ ...file('a.ts', 'omega'), chunks: [{ startLine: 1, endLine: 1, content: 'omega', symbols: [], vector: vector(1, 0) }] }),
    ).toThrow()
    expect(ranked(index, 'alpha')).toEqual(['alpha'])
  })

  test('a snapshot restores the same rankings, scores and filters', () => {
    const index = new OrgIndex()
    index.replaceFile(file('src/cache.ts', 'cache cache store', 'eviction policy for the cache'))
    index.replaceFile({ ...file('lib/store.py', 'store cache'), repositoryId: 'other', language: 'Python' })
    index.removePath('r', 'missing.ts')
    const copy = decodeSnapshot(encodeSnapshot(index, { orgId: 'o', version: 1, embeddings: 'test', savedAt: 0 })).index
    for (const query of ['cache', 'store', 'eviction policy']) expect(copy.searchText(query, {}, 10)).toEqual(index.searchText(query, {}, 10))
    const filter = { repositoryIds: new Set(['other']), languages: new Set(['python']), pathPrefix: 'lib/' }
    expect(copy.searchText('cache', filter, 10)).toEqual(index.searchText('cache', filter, 10))
    expect(copy.searchVector(vector(1, 0, 0), {}, 10)).toEqual(index.searchVector(vector(1, 0, 0), {}, 10))
    // Changes after the restore behave as before it.
    copy.removePath('r', 'src/cache.ts')
    expect(ranked(copy, 'cache')).toEqual(['store cache'])
  })
})

describe('removed chunks', () => {
  test('answer as gone at once; their postings wait for a sweep, which searches, file scores and saves do not run', () => {
    const index = new OrgIndex()
    index.replaceFile(file('a.ts', 'alpha beta', 'alpha beta beta'))
    index.replaceFile(file('b.ts', 'alpha gamma'))
    index.replaceFile(file('c.ts', 'alpha delta beta'))
    const kept = new OrgIndex()
    kept.replaceFile(file('b.ts', 'alpha gamma'))
    kept.replaceFile(file('c.ts', 'alpha delta beta'))
    const answer = (of: OrgIndex, query: string) => of.searchText(query, {}, 10).map((hit) => [of.chunk(hit.slot)!.path, hit.score])
    const fileScores = (of: OrgIndex) =>
      [
        ...of
          .wholeFileScores(
            'alpha beta',
            of.searchText('alpha', {}, 10).map((hit) => hit.slot),
          )
          .values(),
      ].sort()

    index.removePath('r', 'a.ts')
    expect(index.sweepPending).toBe(true)
    // Scored as an index that never held them: the same paths, the same scores.
    for (const query of ['alpha', 'beta', 'alpha beta']) expect(answer(index, query)).toEqual(answer(kept, query))
    expect(fileScores(index)).toEqual(fileScores(kept))
    const saved = decodeSnapshot(encodeSnapshot(index, { orgId: 'o', version: 1, embeddings: 'test', savedAt: 0 })).index
    expect(answer(saved, 'alpha beta')).toEqual(answer(kept, 'alpha beta'))
    expect(saved.sweepPending).toBe(false)
    expect(index.sweepPending).toBe(true)

    // A slot of a removed chunk taken again before the sweep holds its new chunk only.
    index.replaceFile(file('d.ts', 'epsilon'))
    kept.replaceFile(file('d.ts', 'epsilon'))
    expect(answer(index, 'alpha beta epsilon').map(([path]) => path)).toEqual(answer(kept, 'alpha beta epsilon').map(([path]) => path))
    index.removePath('r', 'b.ts')
    kept.removePath('r', 'b.ts')
    expect(index.sweepPending).toBe(true)
    for (const _ of index.sweepRemoved());
    expect(index.sweepPending).toBe(false)
    for (const query of ['alpha', 'beta', 'gamma', 'alpha beta epsilon']) expect(answer(index, query)).toEqual(answer(kept, query))
  })
})

describe('whole files', () => {
  test('a file declaring what the question names outscores one that only uses the word more often', () => {
    const index = new OrgIndex()
    const declared = (path: string, symbols: string[], content: string): FileChunks => ({
      ...file(path),
      chunks: [{ startLine: 1, endLine: 5, content, symbols, vector: vector(1, 0, 0) }],
    })
    index.replaceFile(declared('handlers.ts', ['emitLine'], 'function emitLine(record) { sink.push(record.message, record.level); return record }'))
    index.replaceFile(declared('entry.ts', ['LogRecord'], 'class LogRecord { constructor(message, level) { this.message = message } }'))
    index.replaceFile(declared('other.ts', ['sumValues'], 'function sumValues(values) { return values.length }'))
    const slots = index.searchText('Initialize a record', {}, 10).map((hit) => hit.slot)
    const byPath = new Map([...index.wholeFileScores('Initialize a record', slots)].map(([slot, score]) => [index.chunk(slot)!.path, score]))
    expect(byPath.get('entry.ts')).toBe(1)
    expect(byPath.get('handlers.ts')!).toBeLessThan(1)
  })
})

describe('repositories of one organisation', () => {
  const inRepository = (repositoryId: string, path: string, content: string): FileChunks => ({ ...file(path, content), repositoryId })
  // A large repository whose code uses the question's words here and there, among many others, and a small one
  // about just that: counted in chunks or occurrences, the large one holds the words more often.
  function organisation(): OrgIndex {
    const index = new OrgIndex()
    for (let i = 0; i < 40; i++)
      index.replaceFile(
        inRepository(
          'large',
          `src/module${i}.ts`,
          `function step${i}(queue, worker) { const record = queue.shift(); worker.retry(record, ${i}); scheduler.poll(queue); metrics.count(worker) } // message ${i}`,
        ),
      )
    index.replaceFile(inRepository('small', 'format.ts', 'function formatRecord(record) { return record.timestamp + " " + record.message }'))
    index.replaceFile(inRepository('small', 'level.ts', 'function levelName(level) { return names[level] }'))
    return index
  }
  const question = 'Format the message of a record with its timestamp'

  test('a question weighs the repository whose code says its words most, per word, not the one holding them most often', () => {
    const index = organisation()
    const fit = index.repositoryFit(question)
    expect(fit.get('small')).toBe(1)
    expect(fit.get('large')!).toBeLessThan(0.9)
  })

  test('with a single repository every chunk weighs the same', () => {
    const index = new OrgIndex()
    index.replaceFile(inRepository('only', 'format.ts', 'function formatRecord(record) { return record.message }'))
    expect(index.repositoryFit(question).size).toBe(0)
  })

  test('the weights follow removals and survive a snapshot', () => {
    const index = organisation()
    const copy = decodeSnapshot(encodeSnapshot(index, { orgId: 'o', version: 1, embeddings: 'test', savedAt: 0 })).index
    expect(copy.repositoryFit(question)).toEqual(index.repositoryFit(question))
    index.removeRepository('small')
    expect(index.repositoryFit(question).size).toBe(0)
    // Removed and indexed again, it weighs as before.
    index.replaceFile(inRepository('small', 'format.ts', 'function formatRecord(record) { return record.timestamp + " " + record.message }'))
    index.replaceFile(inRepository('small', 'level.ts', 'function levelName(level) { return names[level] }'))
    expect(index.repositoryFit(question)).toEqual(copy.repositoryFit(question))
  })
})
