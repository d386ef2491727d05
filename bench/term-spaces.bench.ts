/**
 * What a term space per repository costs a vector search: scoring a question against every chunk's term-space
 * vector when the organisation's chunks lie in 14 repositories' spaces (each chunk compared in its own space, each
 * space's scores calibrated to the spread of all), against the same chunks in one space, in the same run. 100,000
 * chunks of 32 dimensions, random vectors (the scan's cost does not depend on what they mean).
 *
 * Then what a vector search's whole scan holds the event loop for: the chunks' 256-dimension sub-word vectors and
 * their term-space vectors scored in one go, as one turn did, against the longest of the steps the search now
 * takes, a block of 4,096 slots at a time, at 100,000 chunks and (not in quick mode) 1,000,000.
 */
import { hashedVector, Meaning, nearestSteps, runToEnd, VectorStore, type ScoringPart, type TermSpace, type VectorQuery } from '../plugins/code-search/index.ts'
import { median } from './lib/import-support.ts'
import { quickOr } from './lib/mode.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const DIMENSIONS = 32
const CHUNKS = 100_000
const SPACES = 14
const ROUNDS = quickOr(7, 3)
const SCANS_PER_ROUND = quickOr(50, 10)

export async function run(): Promise<Row[]> {
  let seed = 7
  const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296 - 0.5
  const store = new VectorStore(DIMENSIONS)
  const spaceOfSlot = new Uint16Array(CHUNKS)
  for (let slot = 0; slot < CHUNKS; slot++) {
    store.set(slot, Float32Array.from({ length: DIMENSIONS }, random))
    // Repositories one after another, as imports fill slots.
    spaceOfSlot[slot] = 1 + Math.floor((slot * SPACES) / CHUNKS)
  }
  // Only the question vectors are scored: the spaces' vocabularies are not read by the scan.
  const space: TermSpace = { dimensions: DIMENSIONS, vocabulary: [], rows: new Map(), vectors: new Float32Array(0), weights: new Float32Array(0) }
  const many = new Meaning(Array(SPACES).fill(space), new Map(), store, spaceOfSlot)
  const one = new Meaning([space], new Map(), store, new Uint16Array(CHUNKS).fill(1))
  const manyQuestions = Float32Array.from({ length: (SPACES + 1) * DIMENSIONS }, (_, i) => (i < DIMENSIONS ? 0 : random()))
  const oneQuestion = Float32Array.from({ length: 2 * DIMENSIONS }, (_, i) => (i < DIMENSIONS ? 0 : random()))
  const sums = new Float32Array(CHUNKS)
  const perScan = (scan: () => void) => {
    const started = performance.now()
    for (let i = 0; i < SCANS_PER_ROUND; i++) scan()
    return (performance.now() - started) / SCANS_PER_ROUND
  }
  const oneTimes: number[] = []
  const manyTimes: number[] = []
  // Alternated round by round, so the machine's load falls on both alike.
  for (let round = 0; round <= ROUNDS; round++) {
    const a = perScan(() => runToEnd(one.addScoreSteps(oneQuestion, 0.25, sums)))
    const b = perScan(() => runToEnd(many.addScoreSteps(manyQuestions, 0.25, sums)))
    if (round === 0) continue
    oneTimes.push(a)
    manyTimes.push(b)
  }
  const baseline = median(oneTimes)
  const value = median(manyTimes)
  const calibration: Row = {
    figure: `term-space scan of ${CHUNKS.toLocaleString('en')} chunks in ${SPACES} repositories' spaces, calibrated`,
    unit: 'ms',
    baseline,
    value,
    ratio: ratioOf(value, baseline),
    notes: [
      `baseline: the same chunks in one space, same run; median of ${ROUNDS} rounds of ${SCANS_PER_ROUND} scans each, alternated`,
      'the scan only: the sub-word vectors, the full-text list and the fusion are the same either way',
    ],
  }
  return [calibration, ...scanSteps(random)]
}

const SUB_WORD_DIMENSIONS = 256
const SEARCH_DEPTH = 200

/** A whole vector scan in one go against the longest step of the same scan given way between blocks, alternated. */
function scanSteps(random: () => number): Row[] {
  const rows: Row[] = []
  for (const chunks of quickOr([100_000, 1_000_000], [100_000])) {
    const subWords = new VectorStore(SUB_WORD_DIMENSIONS)
    const meaningStore = new VectorStore(DIMENSIONS)
    const spaceOfSlot = new Uint16Array(chunks)
    const vector = new Float32Array(SUB_WORD_DIMENSIONS)
    const meaningVector = new Float32Array(DIMENSIONS)
    for (let slot = 0; slot < chunks; slot++) {
      for (let d = 0; d < SUB_WORD_DIMENSIONS; d++) vector[d] = random()
      for (let d = 0; d < DIMENSIONS; d++) meaningVector[d] = random()
      subWords.set(slot, vector)
      meaningStore.set(slot, meaningVector)
      spaceOfSlot[slot] = 1 + Math.floor((slot * SPACES) / chunks)
    }
    const space: TermSpace = { dimensions: DIMENSIONS, vocabulary: [], rows: new Map(), vectors: new Float32Array(0), weights: new Float32Array(0) }
    const meaning = new Meaning(Array(SPACES).fill(space), new Map(), meaningStore, spaceOfSlot)
    const questions = Float32Array.from({ length: (SPACES + 1) * DIMENSIONS }, (_, i) => (i < DIMENSIONS ? 0 : random()))
    // As OrgIndex.searchVectorSteps scores: the question's sub-word vector (sparse) and its term-space vectors.
    const parts: (VectorQuery | ScoringPart)[] = [
      { store: subWords, query: hashedVector('verify the webhook signature', SUB_WORD_DIMENSIONS), weight: 0.75 },
      { slots: chunks, weight: 0.25, addScoreSteps: (weight, sums) => meaning.addScoreSteps(questions, weight, sums) },
    ]
    const wholeTimes: number[] = []
    const stepTimes: number[] = []
    for (let round = 0; round <= ROUNDS; round++) {
      let started = performance.now()
      runToEnd(nearestSteps(parts, SEARCH_DEPTH))
      const whole = performance.now() - started
      const steps = nearestSteps(parts, SEARCH_DEPTH)
      let longest = 0
      for (let done = false; !done; ) {
        started = performance.now()
        done = steps.next().done === true
        longest = Math.max(longest, performance.now() - started)
      }
      if (round === 0) continue
      wholeTimes.push(whole)
      stepTimes.push(longest)
    }
    const baseline = median(wholeTimes)
    const value = median(stepTimes)
    rows.push({
      figure: `longest event-loop turn of a vector search's scan of ${chunks.toLocaleString('en')} chunks`,
      unit: 'ms',
      baseline,
      value,
      ratio: ratioOf(value, baseline),
      notes: [
        `baseline: the same scan in one turn, as searches ran it before, same run; median of ${ROUNDS} rounds, alternated`,
        `${SUB_WORD_DIMENSIONS}-dimension sub-word vectors and ${SPACES} term spaces of ${DIMENSIONS}, the ${SEARCH_DEPTH} best kept`,
      ],
    })
  }
  return rows
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('term-spaces', rows)}`)
}
