import { afterEach, describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import { countedTermsOf } from '../../plugins/code-search/terms/index.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { Meaning } from '../../plugins/code-search/vectors/meaning.ts'
import { learnTermSpace, type TermSpace } from '../../plugins/code-search/vectors/term-space.ts'
import { termsOf } from '../../plugins/code-search/terms/terms.ts'
import { runToEnd, VectorStore } from '../../plugins/code-search/vectors/vectors.ts'

// Made-up words, so nothing but this code relates them: a topic's words are used together, never with another's.
const SYLLABLES = ['ba', 'ko', 'ri', 'tu', 'me', 'za', 'lo', 'fi', 'nu', 'pe', 'da', 'gi']
const topicWord = (topic: number, i: number) =>
  `${SYLLABLES[topic % 12]}${SYLLABLES[Math.floor(topic / 12) % 12]}x${SYLLABLES[i % 12]}${SYLLABLES[Math.floor(i / 12) % 12]}q`

function seeded(seed: number) {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    return seed / 4294967296
  }
}

/** One Python file per topic, `functions` functions of eight of the topic's `words` words each. */
function topicFiles(topics: number[], functions: number, words: number, seed: number): RepositoryFile[] {
  const random = seeded(seed)
  return topics.map((topic) => {
    const pick = () => topicWord(topic, Math.floor(random() * words))
    const body = Array.from({ length: functions }, () => {
      const w = Array.from({ length: 8 }, pick)
      return `def ${w[0]}_${w[1]}(${w[2]}, ${w[3]}):\n    ${w[4]} = ${w[2]}.${w[5]}(${w[3]})\n    return ${w[6]}(${w[4]}, ${w[7]})\n`
    })
    return { path: `topic${topic}.py`, content: body.join('\n') }
  })
}

const chunkTerms = (files: RepositoryFile[]) => files.flatMap((file) => file.content.split('\n\n').map((chunk) => termsOf(chunk)))

describe('vector search with a repository beside a much larger one', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup()
  })

  test("a question about the small repository's code finds it by meaning, not the large repository's code", async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
    cleanups.push(() => index.close())
    // More subjects in the large repository than a space has dimensions: one space for both would have none left for the small one.
    const large = topicFiles(
      Array.from({ length: 96 }, (_, topic) => topic),
      60,
      150,
      1,
    )
    // Three functions a chunk: 40 chunks, a word in about one in five.
    const small = topicFiles([100], 120, 120, 2)
    await index.indexFiles({ orgId: 'o', repositoryId: 'large', repositoryName: 'large', files: large })
    await index.indexFiles({ orgId: 'o', repositoryId: 'small', repositoryName: 'small', files: small })
    await index.meaningLearnt!('o')
    const word = topicWord(100, 0)
    const results = await index.search({ orgId: 'o' }, { query: word, mode: 'vector', limit: 15 })
    expect(results).toHaveLength(15)
    expect(results.map((result) => result.repositoryId)).toEqual(Array(15).fill('small'))
    // Found by meaning: code of the subject that never uses the question's word.
    const lines = small[0]!.content.split('\n')
    const lacking = results.filter(
      (result) =>
        !lines
          .slice(result.startLine - 1, result.endLine)
          .join('\n')
          .includes(word),
    )
    expect(lacking.length).toBeGreaterThanOrEqual(3)
  })
})

describe('a search of one repository of several', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup()
  })

  test('ranks by meaning exactly as the repository indexed alone', async () => {
    const together = createCodeIndex({ embeddings: createHashedEmbeddings() })
    const alone = createCodeIndex({ embeddings: createHashedEmbeddings() })
    cleanups.push(
      () => together.close(),
      () => alone.close(),
    )
    const large = topicFiles([0, 1, 2, 3, 4, 5], 60, 60, 1)
    const small = topicFiles([6, 7], 60, 60, 2)
    await together.indexFiles({ orgId: 'o', repositoryId: 'large', repositoryName: 'large', files: large })
    await together.indexFiles({ orgId: 'o', repositoryId: 'small', repositoryName: 'small', files: small })
    await alone.indexFiles({ orgId: 'o', repositoryId: 'small', repositoryName: 'small', files: small })
    await together.meaningLearnt!('o')
    await alone.meaningLearnt!('o')
    const question = `${topicWord(6, 0)} ${topicWord(7, 3)}`
    const ranked = (results: { path: string; startLine: number; score: number }[]) => results.map((r) => `${r.path}:${r.startLine} ${r.score}`)
    const filtered = await together.search({ orgId: 'o' }, { query: question, mode: 'vector', limit: 20, repositoryIds: ['small'] })
    expect(filtered).toHaveLength(20)
    expect(ranked(filtered)).toEqual(ranked(await alone.search({ orgId: 'o' }, { query: question, mode: 'vector', limit: 20 })))
  })
})

describe('scores across spaces', () => {
  const spaceOf = (topics: number[], seed: number) => learnTermSpace(chunkTerms(topicFiles(topics, 60, 40, seed)))!

  test('a store scored by each slot its own query adds what scoring each group alone adds', () => {
    const store = new VectorStore(4, 8)
    const groupOf = new Uint16Array(20)
    const random = seeded(3)
    for (let slot = 0; slot < 19; slot++) {
      store.set(
        slot,
        Float32Array.from({ length: 4 }, () => random() - 0.5),
      )
      groupOf[slot] = slot % 3
    }
    const queries = Float32Array.from({ length: 12 }, (_, i) => (i < 4 ? 0 : random() - 0.5))
    const together = new Float32Array(19)
    runToEnd(store.addScoreByGroupSteps(queries, groupOf, together))
    for (let group = 0; group < 3; group++) {
      const alone = new Float32Array(19)
      store.addScores(queries.subarray(group * 4, group * 4 + 4), 1, alone)
      for (let slot = group; slot < 19; slot += 3) expect(together[slot]!).toBeCloseTo(alone[slot]!, 5)
    }
    expect(
      together
        .subarray(0, 19)
        .filter((_, slot) => slot % 3 === 0)
        .every((score) => score === 0),
    ).toBe(true)
  })

  test('with one space, scores are the similarities themselves; with two, each space is brought to the spread of all', () => {
    const first = spaceOf([0, 1, 2, 3], 1)
    const second = spaceOf([4, 5, 6, 7], 2)
    const build = (spaces: TermSpace[], texts: [string, number][]) => {
      const store = new VectorStore(first.dimensions)
      const meaning = new Meaning(spaces, new Map(spaces.map((_, at) => [`r${at}`, at])), store, new Uint16Array(0))
      for (const [slot, [text, space]] of texts.entries()) meaning.set(slot, `r${space}`, countedTermsOf(text))
      return { store, meaning }
    }
    const firstTexts = topicFiles([0, 1], 10, 40, 5).flatMap((file) => file.content.split('\n\n'))
    const secondTexts = topicFiles([4, 5], 10, 40, 6).flatMap((file) => file.content.split('\n\n'))
    const terms = new Map([[topicWord(0, 1), 1]])

    const one = build(
      [first],
      firstTexts.map((text) => [text, 0]),
    )
    const expected = new Float32Array(firstTexts.length)
    one.store.addScores(one.meaning.questionVectors(terms)!.subarray(first.dimensions), 0.5, expected)
    const scored = new Float32Array(firstTexts.length)
    runToEnd(one.meaning.addScoreSteps(one.meaning.questionVectors(terms)!, 0.5, scored))
    expect([...scored]).toEqual([...expected])

    const two = build([first, second], [...firstTexts.map((text): [string, number] => [text, 0]), ...secondTexts.map((text): [string, number] => [text, 1])])
    const questions = two.meaning.questionVectors(new Map([...terms, [topicWord(4, 1), 1]]))!
    const calibrated = new Float32Array(firstTexts.length + secondTexts.length)
    runToEnd(two.meaning.addScoreSteps(questions, 1, calibrated))
    const spread = (scores: Float32Array) => {
      const mean = scores.reduce((sum, s) => sum + s, 0) / scores.length
      return { mean, spread: Math.sqrt(scores.reduce((sum, s) => sum + (s - mean) ** 2, 0) / scores.length) }
    }
    const ofFirst = spread(calibrated.subarray(0, firstTexts.length))
    const ofSecond = spread(calibrated.subarray(firstTexts.length))
    expect(ofFirst.mean).toBeCloseTo(ofSecond.mean, 4)
    expect(ofFirst.spread).toBeCloseTo(ofSecond.spread, 4)
    expect(ofFirst.spread).toBeGreaterThan(0)
    // Within a space, the order of similarities is kept.
    const raw = new Float32Array(calibrated.length)
    runToEnd(two.store.addScoreByGroupSteps(questions, new Uint16Array(calibrated.length).fill(1, 0, firstTexts.length).fill(2, firstTexts.length), raw))
    const order = (scores: Float32Array) => [...scores.keys()].sort((a, b) => scores[b]! - scores[a]!)
    expect(order(calibrated.subarray(0, firstTexts.length))).toEqual(order(raw.subarray(0, firstTexts.length)))
  })
})
