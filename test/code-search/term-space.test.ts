import { describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createFileSnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex, type CodeIndexOptions } from '../../plugins/code-search/service.ts'
import { termSpaceLearner } from '../../plugins/code-search/vectors/term-space-learner.ts'
import { chunkTermWeights, embedInTermSpace, learnTermSpace, type TermSpace } from '../../plugins/code-search/vectors/term-space.ts'
import { termsOf } from '../../plugins/code-search/terms/terms.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { join } from 'node:path'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { tempDir } from '../helpers.ts'
import { cleanupsAfterEach } from './suite.ts'

// Made-up words, so nothing but this code relates them: each topic's words are used together and never with
// another topic's.
const SYLLABLES = ['ba', 'ko', 'ri', 'tu', 'me', 'za', 'lo', 'fi', 'nu', 'pe', 'da', 'gi']
function topicWords(topic: number, count: number): string[] {
  const words: string[] = []
  for (let i = 0; words.length < count; i++) {
    const word = `${'xqvw'[topic]}${SYLLABLES[(i * 5 + topic) % 12]}${SYLLABLES[Math.floor(i / 12) % 12]}${SYLLABLES[(i * 7) % 12]}k`
    if (!words.includes(word)) words.push(word)
  }
  return words
}

function seeded(seed: number) {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    return seed / 4294967296
  }
}

/** One Python file per topic, `functions` functions each, every function using eight of its topic's words. */
function topicFiles(topics: number[], functions = 120, seed = 1): RepositoryFile[] {
  const random = seeded(seed)
  return topics.map((topic) => {
    const words = topicWords(topic, 80)
    const pick = () => words[Math.floor(random() * words.length)]!
    const body = Array.from({ length: functions }, () => {
      const w = Array.from({ length: 8 }, pick)
      return `def ${w[0]}_${w[1]}(${w[2]}, ${w[3]}):\n    ${w[4]} = ${w[2]}.${w[5]}(${w[3]})\n    return ${w[6]}(${w[4]}, ${w[7]})\n`
    })
    return { path: `topic${topic}.py`, content: body.join('\n') }
  })
}

const cosine = (space: TermSpace, a: string, b: string): number => {
  const x = embedInTermSpace(space, [[a, 1]])
  const y = embedInTermSpace(space, [[b, 1]])
  return x.reduce((sum, value, d) => sum + value * y[d]!, 0)
}

const chunkTerms = (files: RepositoryFile[]) => files.flatMap((file) => file.content.split('\n\n').map((chunk) => termsOf(chunk)))

describe('learning a term space', () => {
  const files = topicFiles([0, 1, 2, 3])
  const space = learnTermSpace(chunkTerms(files))!

  test('words used together lie closer than words of different code', () => {
    expect(space).toBeDefined()
    const own = new Set(topicWords(0, 80))
    const [word] = topicWords(0, 1)
    const nearest = [...space.rows.keys()]
      .filter((term) => term !== word && /^[xqvw]\w+k$/.test(term))
      .sort((a, b) => cosine(space, word!, b) - cosine(space, word!, a))
      .slice(0, 20)
    expect(nearest.every((term) => own.has(term))).toBe(true)
    expect(cosine(space, word!, nearest[0]!)).toBeGreaterThan(0.4)
    expect(cosine(space, word!, topicWords(1, 1)[0]!)).toBeLessThan(0.2)
  })

  test('the same chunks give the same space, so every process learns the same', () => {
    const again = learnTermSpace(chunkTerms(files))!
    expect([...again.rows]).toEqual([...space.rows])
    expect(again.vectors).toEqual(space.vectors)
  })

  test('a text is embedded from the words the space knows, and a text of unknown words is all zeros', () => {
    const known = embedInTermSpace(space, chunkTermWeights(termsOf(files[0]!.content.split('\n\n')[0]!)))
    expect(Math.hypot(...known)).toBeCloseTo(1, 5)
    expect(embedInTermSpace(space, [['neverseenword', 1]]).every((value) => value === 0)).toBe(true)
  })

  test('the space learnt on the Worker comes back as learnt: the same terms in the same rows, the same vectors', async () => {
    const contents = files.flatMap((file) => file.content.split('\n\n'))
    // Several batches, as an index is read.
    const batches = [0, 1, 2, 3].map((part) => {
      const mine = contents.filter((_, i) => i % 4 === part)
      return { slots: Int32Array.from(mine, (_, i) => part + i * 4), repositoryIds: mine.map(() => 'topics'), contents: mine }
    })
    const ordered = batches.flatMap((batch) => batch.contents)
    const here = learnTermSpace(ordered.map((chunk) => termsOf(chunk)))!
    const meaning = (await termSpaceLearner().learn(batches))!
    expect(meaning.spaces).toHaveLength(1)
    const learnt = meaning.spaces[0]!
    expect(learnt.vocabulary).toEqual(here.vocabulary)
    expect([...learnt.rows]).toEqual([...here.rows])
    expect(learnt.vectors).toEqual(here.vectors)
    expect(learnt.weights).toEqual(here.weights)
    expect(meaning.store.slots).toBe(contents.length)
  })

  test('too little code to learn from gives no space', () => {
    expect(learnTermSpace(chunkTerms(topicFiles([0], 3)))).toBeUndefined()
  })
})

describe('vector search in the learnt space', () => {
  const cleanups = cleanupsAfterEach()
  const make = (options: Partial<CodeIndexOptions> = {}) => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), ...options })
    cleanups.push(() => index.close())
    return index
  }
  /** The topic of each result's file, and whether its lines hold the word. */
  const answered = (results: { path: string; startLine: number; endLine: number }[], word: string, files: RepositoryFile[]) =>
    results.map((result) => {
      const lines = files.find((file) => file.path === result.path)!.content.split('\n')
      return {
        topic: Number(/topic(\d)/.exec(result.path)![1]),
        holdsWord: lines
          .slice(result.startLine - 1, result.endLine)
          .join('\n')
          .includes(word),
      }
    })

  /** A vector search for the topic's first word answers only code of that topic, some of it without the word. */
  async function expectFoundByMeaning(index: ReturnType<typeof make>, topic: number, files: RepositoryFile[]) {
    const [word] = topicWords(topic, 1)
    const byVector = answered(await index.search({ orgId: 'o' }, { query: word!, mode: 'vector', limit: 15 }), word!, files)
    expect(byVector).toHaveLength(15)
    expect(byVector.every((result) => result.topic === topic)).toBe(true)
    expect(byVector.filter((result) => !result.holdsWord).length).toBeGreaterThanOrEqual(3)
  }

  test('a question finds code of its subject that never uses its word, which text search cannot', async () => {
    const index = make()
    const files = topicFiles([0, 1, 2, 3])
    await index.indexFiles({ orgId: 'o', repositoryId: 'r', repositoryName: 'r', files })
    await index.meaningLearnt!('o')
    const [word] = topicWords(2, 1)
    const byText = await index.search({ orgId: 'o' }, { query: word!, mode: 'text', limit: 15 })
    expect(byText.length).toBeGreaterThan(0)
    expect(answered(byText, word!, files).every((result) => result.holdsWord)).toBe(true)
    await expectFoundByMeaning(index, 2, files)
  })

  test('the space is learnt again after an import, so code of a new subject is found by its meaning too', async () => {
    const index = make()
    await index.indexFiles({ orgId: 'o', repositoryId: 'first', repositoryName: 'first', files: topicFiles([0, 1]) })
    await index.meaningLearnt!('o')
    const second = topicFiles([2, 3], 120, 2)
    await index.indexFiles({ orgId: 'o', repositoryId: 'second', repositoryName: 'second', files: second })
    await index.meaningLearnt!('o')
    await expectFoundByMeaning(index, 3, second)
  })

  test('closing an index stops the space it was learning, and the next index learns its own', async () => {
    const closed = make()
    await closed.indexFiles({ orgId: 'o', repositoryId: 'r', repositoryName: 'r', files: topicFiles([0, 1, 2, 3], 400) })
    await closed.close()
    await closed.meaningLearnt!('o')
    const index = make()
    const files = topicFiles([0, 1, 2, 3])
    await index.indexFiles({ orgId: 'o', repositoryId: 'r', repositoryName: 'r', files })
    await index.meaningLearnt!('o')
    await expectFoundByMeaning(index, 0, files)
  })

  test('a restarted process learns the space again from the saved index', async () => {
    const dir = tempDir('term-space-')
    const db = await openDatabase({ sqliteFile: join(dir.path, 'service.db') })
    cleanups.push(
      () => dir.remove(),
      () => db.close(),
    )
    await migrate(db, migrations)
    const snapshots = () => createFileSnapshotStore({ db, dir: join(dir.path, 'indexes') })
    const first = make({ snapshots: snapshots(), refreshIntervalMs: 0 })
    const files = topicFiles([0, 1, 2, 3])
    await first.indexFiles({ orgId: 'o', repositoryId: 'r', repositoryName: 'r', files })
    await first.close()
    const restarted = make({ snapshots: snapshots(), refreshIntervalMs: 0 })
    await restarted.meaningLearnt!('o')
    await expectFoundByMeaning(restarted, 1, files)
  })
})
