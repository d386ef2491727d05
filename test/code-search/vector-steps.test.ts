import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { hashedVector } from '../../plugins/code-search/embeddings/hashed.ts'
import { OrgIndex } from '../../plugins/code-search/index/org-index.ts'
import { rankingSteps } from '../../plugins/code-search/search/ranking.ts'
import { countedTermsOf } from '../../plugins/code-search/terms/index.ts'
import { Meaning } from '../../plugins/code-search/vectors/meaning.ts'
import type { TermSpace } from '../../plugins/code-search/vectors/term-space.ts'
import { nearestSteps, runToEnd, VectorStore, type ScoredSlot, type ScoringPart, type VectorQuery } from '../../plugins/code-search/vectors/vectors.ts'

const DIMENSIONS = 4
/** Only the question rows are scored: the scan never reads a space's vocabulary. */
const space: TermSpace = { dimensions: DIMENSIONS, vocabulary: [], rows: new Map(), vectors: new Float32Array(0), weights: new Float32Array(0) }

/** A store of blocks of 4 slots, and a meaning of two spaces over a store of its own, slots alternating between them. */
function scored(vectors: number[][]) {
  const store = new VectorStore(DIMENSIONS, 4)
  const meaningStore = new VectorStore(DIMENSIONS, 4)
  vectors.forEach((values, slot) => {
    store.set(slot, Float32Array.from(values))
    meaningStore.set(slot, Float32Array.from(values.toReversed()))
  })
  const spaceOfSlot = Uint16Array.from(vectors, (_, slot) => 1 + (slot % 2))
  const meaning = new Meaning([space, space], new Map([['later', 1]]), meaningStore, spaceOfSlot)
  return { store, meaning }
}

/** A scan's parts: the store and the meaning's calibrated scores, as a search of an index with a term space has. */
function partsOf({ store, meaning }: ReturnType<typeof scored>, query: number[]): (VectorQuery | ScoringPart)[] {
  const questions = Float32Array.from([0, 0, 0, 0, ...query, ...query.toReversed()])
  return [
    { store, query: Float32Array.from(query), weight: 0.75 },
    { slots: meaning.store.slots, weight: 0.25, addScoreSteps: (weight, sums) => meaning.addScoreSteps(questions, weight, sums) },
  ]
}

const component = fc.integer({ min: -5, max: 5 })
const vectorArb = fc.array(component, { minLength: DIMENSIONS, maxLength: DIMENSIONS })

describe('a vector scan in steps', () => {
  test('gives way between blocks: a scan of 10 blocks yields at least 9 times', () => {
    const data = scored(Array.from({ length: 40 }, (_, slot) => [1, slot % 3, 0, 1]))
    const steps = nearestSteps(partsOf(data, [1, 0, 1, 0]), 5)
    let yields = 0
    while (!steps.next().done) yields++
    expect(yields).toBeGreaterThanOrEqual(9)
  })

  test('scans stepped in turn answer what each answers alone (each sums into arrays of its own)', () => {
    fc.assert(
      fc.property(fc.array(vectorArb, { minLength: 1, maxLength: 40 }), fc.array(vectorArb, { minLength: 2, maxLength: 4 }), (vectors, queries) => {
        const data = scored(vectors)
        const alone = queries.map((query) => runToEnd(nearestSteps(partsOf(data, query), 6)))
        const scans = queries.map((query) => nearestSteps(partsOf(data, query), 6))
        const answers: (ScoredSlot[] | undefined)[] = queries.map(() => undefined)
        while (answers.some((answer) => answer === undefined))
          scans.forEach((scan, i) => {
            if (answers[i] !== undefined) return
            const step = scan.next()
            if (step.done) answers[i] = step.value
          })
        expect(answers).toEqual(alone)
      }),
      { numRuns: 200 },
    )
  })

  test('slots stored and spaces grown while a scan runs fail nothing, and it answers the slots there when it began', () => {
    const data = scored(Array.from({ length: 10 }, () => [1, 1, 1, 1]))
    const scan = nearestSteps(partsOf(data, [1, 1, 1, 1]), 50)
    scan.next()
    for (let slot = 10; slot < 30; slot++) {
      data.store.set(slot, Float32Array.from([5, 5, 5, 5]))
      // Past the end of the meaning's array of spaces: it grows, the scan keeps the one it began with.
      data.meaning.set(slot, 'later', countedTermsOf('anything'))
    }
    const answer = runToEnd(scan)
    expect(answer.map((hit) => hit.slot).sort((a, b) => a - b)).toEqual([...Array(10).keys()])
  })
})

describe('a search whose vector scan spans many blocks', () => {
  const words = ['parse', 'config', 'token', 'verify', 'cache', 'socket', 'render', 'route', 'signal', 'stream']
  const FILES = 9000
  const store = (index: OrgIndex, n: number, content = `function ${words[n % 10]}${words[(n * 7) % 10]}${n}() { return ${words[(n * 3) % 10]} }`) =>
    index.replaceFile({
      repositoryId: n % 2 ? 'odd' : 'even',
      repositoryName: n % 2 ? 'acme/odd' : 'acme/even',
      path: `src/file${n}.ts`,
      language: 'TypeScript',
      chunks: [{ startLine: 1, endLine: 1, content, symbols: [], vector: hashedVector(content, 64) }],
    })
  /** Twenty files of the even repository, rewritten to match the question best between the search's steps. */
  const rewritten = Array.from({ length: 20 }, (_, i) => 2 + 4 * i)

  test('a repository removed and files replaced between its steps are left out of its answer, and nothing fails', () => {
    // 3 blocks of the store's 4,096 slots and more, in two repositories.
    const index = new OrgIndex()
    for (let n = 0; n < FILES; n++) store(index, n)
    const question = 'verify token signal'
    const query = { text: question, vector: hashedVector(question, 64), code: undefined, codeVector: undefined, filter: {}, limit: 40 }
    for (const mode of ['vector', 'hybrid'] as const) {
      const before = runToEnd(rankingSteps(index, { ...query, mode }))
      expect(before.some(({ slot }) => index.chunk(slot)!.repositoryId === 'odd')).toBe(true)
      const steps = rankingSteps(index, { ...query, mode })
      // Into the vector scan: the text step and the scan's first block are done.
      for (let i = 0; i < (mode === 'vector' ? 2 : 3); i++) expect(steps.next().done).toBe(false)
      for (const path of index.pathsOf('odd')) index.removePath('odd', path)
      // Swept, the removed chunks' slots are taken again: the rewritten files land in slots that held other chunks
      // when the scan began.
      runToEnd(index.sweepRemoved())
      for (const n of rewritten) store(index, n, 'verify token signal, verify token signal')
      const replacedSlots = [...Array(index.vectors!.slots).keys()].filter((slot) => index.chunk(slot)?.content.startsWith('verify token signal, verify'))
      expect(replacedSlots).toHaveLength(20)
      const answer = runToEnd(steps)
      expect(answer.length).toBeGreaterThan(0)
      for (const { slot } of answer) {
        expect(index.chunk(slot)).toBeDefined()
        expect(index.chunk(slot)!.repositoryId).toBe('even')
        expect(replacedSlots).not.toContain(slot)
      }
      // Put back for the next mode.
      for (let n = 1; n < FILES; n += 2) store(index, n)
      for (const n of rewritten) store(index, n)
    }
  })
})
