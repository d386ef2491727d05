/**
 * An organisation's learnt meaning: a term space per repository (term-space.ts), each chunk's vector in its own
 * repository's space, and the scoring of a question against all of them. A space learnt from the whole
 * organisation is ruled by its largest repository, whose words then crowd out a small one's; one per repository
 * keeps each repository's own sense of its words. Repositories with too little code to learn from share a space
 * learnt from all of them together.
 *
 * Similarities in different spaces are not on one scale (a small space puts everything nearer), so with several
 * spaces each space's scores are calibrated: shifted and scaled so their mean and spread over that space's chunks
 * are those of all chunks. With one space in play nothing is calibrated: a repository indexed alone, or searched on
 * its own, ranks by its own space as it would alone.
 */
import type { CountedTerms } from '../terms/index.ts'
import { embedCountedInTermSpace, embedInTermSpace, type TermSpace } from './term-space.ts'
import { borrowScores, releaseScores, type VectorStore } from './vectors.ts'

export class Meaning {
  /** Space of each slot, plus one (0: none, a chunk removed or of a repository without a space). */
  private spaceOfSlot: Uint16Array
  private scratch = new Float32Array(0)

  constructor(
    /** The learnt spaces, all of the same dimensions. */
    readonly spaces: readonly TermSpace[],
    /** repositoryId -> its space in `spaces`. */
    readonly spaceOfRepository: ReadonlyMap<string, number>,
    /** Each chunk's vector in its repository's space, by slot. */
    readonly store: VectorStore,
    /** Space of each of the store's slots, plus one, 0 for none. */
    spaceOfSlot: Uint16Array,
  ) {
    this.spaceOfSlot = spaceOfSlot
  }

  get dimensions(): number {
    return this.store.dimensions
  }

  /** Terms of all the spaces together (a term of two spaces counts twice). */
  get terms(): number {
    return this.spaces.reduce((sum, space) => sum + space.vocabulary.length, 0)
  }

  /** Embeds a chunk of the repository in the repository's space; a repository without one leaves the slot empty. */
  set(slot: number, repositoryId: string, counted: CountedTerms): void {
    const space = this.spaceOfRepository.get(repositoryId)
    if (space === undefined) {
      this.clear(slot)
      return
    }
    if (this.scratch.length < this.dimensions) this.scratch = new Float32Array(this.dimensions)
    this.store.set(slot, embedCountedInTermSpace(this.spaces[space]!, counted, this.scratch))
    if (slot >= this.spaceOfSlot.length) {
      const grown = new Uint16Array(Math.max(slot + 1, this.spaceOfSlot.length * 2))
      grown.set(this.spaceOfSlot)
      this.spaceOfSlot = grown
    }
    this.spaceOfSlot[slot] = space + 1
  }

  clear(slot: number): void {
    this.store.clear(slot)
    if (slot < this.spaceOfSlot.length) this.spaceOfSlot[slot] = 0
  }

  /**
   * The question in each space, one row per space plus a first row of zeros (for slots without a space); undefined
   * when no space knows any of its terms.
   */
  questionVectors(terms: ReadonlyMap<string, number>): Float32Array | undefined {
    const { dimensions } = this
    const rows = new Float32Array((this.spaces.length + 1) * dimensions)
    let known = false
    for (let s = 0; s < this.spaces.length; s++) {
      const vector = embedInTermSpace(this.spaces[s]!, terms)
      if (vector.some((value) => value !== 0)) known = true
      rows.set(vector, (s + 1) * dimensions)
    }
    return known ? rows : undefined
  }

  /**
   * Adds `weight` times each slot's similarity to the question (questionVectors) in its own space, calibrated over
   * the spaces of `repositoryIds` (all when absent), to `sums`, over the slots scored when the scan began, yielding
   * between pieces of the work. Slots of other repositories may get any score: the search filters them out.
   */
  *addScoreSteps(questions: Float32Array, weight: number, sums: Float32Array, repositoryIds?: ReadonlySet<string>): Generator<void> {
    const n = this.store.slots
    const inPlay = new Uint8Array(this.spaces.length + 1)
    let spacesInPlay = 0
    let onlySpace = 0
    for (let s = 0; s < this.spaces.length; s++) inPlay[s + 1] = repositoryIds ? 0 : 1
    for (const repositoryId of repositoryIds ?? []) {
      const space = this.spaceOfRepository.get(repositoryId)
      if (space !== undefined) inPlay[space + 1] = 1
    }
    for (let g = 1; g <= this.spaces.length; g++)
      if (inPlay[g]) {
        spacesInPlay++
        onlySpace = g
      }
    if (spacesInPlay === 0) return
    // One space: its similarities as they are, so a repository searched on its own ranks as if it were alone.
    if (spacesInPlay === 1) {
      yield* this.store.addScoreSteps(questions.subarray(onlySpace * this.dimensions, (onlySpace + 1) * this.dimensions), weight, sums, n)
      return
    }
    const raw = borrowScores(n)
    try {
      // A chunk stored meanwhile may grow the array: each scan reads the one it began with.
      const spaceOfSlot = this.spaceOfSlot
      yield* this.store.addScoreByGroupSteps(questions, spaceOfSlot, raw, n)
      const calibration = calibrationOf(raw, n, spaceOfSlot, inPlay)
      if (!calibration) return
      yield
      addCalibrated(raw, n, spaceOfSlot, calibration, weight, sums)
    } finally {
      releaseScores(raw)
    }
  }
}

interface Calibration {
  /** Per space plus one: 0 for those not in play. */
  inPlay: Uint8Array
  shift: Float64Array
  scale: Float64Array
}

/**
 * Each space's shift and scale, so its scores among the first `n` slots have the mean and spread of all the scores
 * of the spaces in play; undefined when no slot is in play.
 */
function calibrationOf(raw: Float32Array, n: number, spaceOfSlot: Uint16Array, inPlay: Uint8Array): Calibration | undefined {
  const groups = inPlay.length
  const count = new Float64Array(groups)
  const sum = new Float64Array(groups)
  const squares = new Float64Array(groups)
  for (let slot = 0; slot < n; slot++) {
    const group = slot < spaceOfSlot.length ? spaceOfSlot[slot]! : 0
    if (!inPlay[group]) continue
    const score = raw[slot]!
    count[group]!++
    sum[group]! += score
    squares[group]! += score * score
  }
  let allCount = 0
  let allSum = 0
  let allSquares = 0
  for (let g = 1; g < groups; g++) {
    if (!inPlay[g]) continue
    allCount += count[g]!
    allSum += sum[g]!
    allSquares += squares[g]!
  }
  if (allCount === 0) return undefined
  const spread = (c: number, s: number, q: number) => Math.sqrt(Math.max(0, q / c - (s / c) ** 2))
  const allMean = allSum / allCount
  const allSpread = spread(allCount, allSum, allSquares)
  const shift = new Float64Array(groups)
  const scale = new Float64Array(groups)
  for (let g = 1; g < groups; g++) {
    if (!inPlay[g] || count[g] === 0) continue
    const mean = sum[g]! / count[g]!
    const own = spread(count[g]!, sum[g]!, squares[g]!)
    scale[g] = own > 0 ? allSpread / own : 1
    shift[g] = allMean - mean * scale[g]!
  }
  return { inPlay, shift, scale }
}

function addCalibrated(
  raw: Float32Array,
  n: number,
  spaceOfSlot: Uint16Array,
  { inPlay, shift, scale }: Calibration,
  weight: number,
  sums: Float32Array,
): void {
  for (let slot = 0; slot < n; slot++) {
    const group = slot < spaceOfSlot.length ? spaceOfSlot[slot]! : 0
    if (!inPlay[group]) continue
    sums[slot]! += weight * (shift[group]! + scale[group]! * raw[slot]!)
  }
}
