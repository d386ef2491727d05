/**
 * Chunk vectors of one organisation, by slot, for exact nearest-neighbour search.
 *
 * Stored in blocks of consecutive slots, one column per dimension within a block, and quantised to 8 bits with
 * a scale per vector: a query's score is a few tight loops over typed arrays, and only over the query's non-zero
 * dimensions, which for the hashed embeddings of a short query is a small fraction of them. 50,000 chunks of 256
 * dimensions take 12.8 MB, and the store grows a block at a time without copying what it holds.
 */

export interface ScoredSlot {
  slot: number
  score: number
}

/** One store's part of a score: its similarity to `query`, times `weight`. */
export interface VectorQuery {
  store: VectorStore
  query: Float32Array
  weight: number
}

/**
 * A part of a score computed its own way: adds `weight` times its score of each of the first `slots` slots to
 * `sums`, yielding between pieces of the work.
 */
export interface ScoringPart {
  slots: number
  addScoreSteps(weight: number, sums: Float32Array): Generator<void>
  weight: number
}

/** Score arrays of finished scans, kept for the next: a scan of a large index sums into megabytes. */
const spareScores: Float32Array[] = []

/** A zeroed array of at least `n` scores, for one scan; give it back with releaseScores when the scan ends. */
export function borrowScores(n: number): Float32Array {
  const spare = spareScores.pop()
  if (spare && spare.length >= n) {
    spare.fill(0, 0, n)
    return spare
  }
  return new Float32Array(Math.max(n, 1024))
}

export function releaseScores(scores: Float32Array): void {
  if (spareScores.length < 4) spareScores.push(scores)
}

/** Runs the steps of a scan to their end in one go: for callers that need not give way. */
export function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
  }
}

/**
 * The `k` slots of best summed score over the parts (stores addressed by the same slots), positive scores only,
 * best first, among those `accept` lets through.
 */
export function nearestOf(parts: readonly (VectorQuery | ScoringPart)[], k: number, accept?: (slot: number) => boolean): ScoredSlot[] {
  return runToEnd(nearestSteps(parts, k, accept))
}

/**
 * nearestOf one block of slots at a time: a scan of a large organisation's vectors takes tens of milliseconds, and
 * other work runs between its steps. Each scan sums into arrays of its own, so scans may interleave. Slots stored
 * after the first step are not scored; a caller that lets the index change meanwhile drops the slots that changed.
 */
export function* nearestSteps(parts: readonly (VectorQuery | ScoringPart)[], k: number, accept?: (slot: number) => boolean): Generator<void, ScoredSlot[]> {
  const n = Math.max(0, ...parts.map((part) => ('store' in part ? part.store.slots : part.slots)))
  if (n === 0 || k <= 0) return []
  const sums = borrowScores(n)
  try {
    for (const part of parts) {
      if ('store' in part) yield* part.store.addScoreSteps(part.query, part.weight, sums, n)
      else yield* part.addScoreSteps(part.weight, sums)
    }
    yield
    // A step of its own, whose answer the caller reads at once: the slots `accept` lets through are still there.
    return bestOf(sums, n, k, accept)
  } finally {
    releaseScores(sums)
  }
}

/** The `k` of the first `n` slots of best positive score, best first, among those `accept` lets through. */
function bestOf(sums: Float32Array, n: number, k: number, accept: ((slot: number) => boolean) | undefined): ScoredSlot[] {
  // Insertion into a short sorted list: k is small, so this beats sorting n scores.
  const best: ScoredSlot[] = []
  let floor = 0
  for (let slot = 0; slot < n; slot++) {
    const score = sums[slot]!
    if (score <= floor) continue
    if (accept && !accept(slot)) continue
    let at = best.length
    while (at > 0 && best[at - 1]!.score < score) at--
    best.splice(at, 0, { slot, score })
    if (best.length > k) best.pop()
    if (best.length === k) floor = best[k - 1]!.score
  }
  return best
}

/** Slots per block: a store grows a block at a time, so growing never copies what it holds. */
const BLOCK_SLOTS = 4096

/** Vectors of `slots` consecutive slots: column-major, one column of `slots` bytes per dimension, and their scales. */
interface Block {
  values: Int8Array
  scales: Float32Array
}

export class VectorStore {
  private readonly blocks: Block[] = []
  private scratch = new Float32Array(0)
  private rowScratch = new Int32Array(0)
  /** One past the highest slot ever set. */
  private used = 0

  constructor(
    readonly dimensions: number,
    /** Slots per block; smaller only in tests. */
    private readonly blockSlots = BLOCK_SLOTS,
  ) {}

  get capacity(): number {
    return this.blocks.length * this.blockSlots
  }

  get slots(): number {
    return this.used
  }

  set(slot: number, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new Error(`vector has ${vector.length} dimensions, the index ${this.dimensions}`)
    // Whole new blocks, never a bigger copy of the store: growing a large index held the event loop for 100 ms.
    while (slot >= this.capacity) this.blocks.push({ values: new Int8Array(this.blockSlots * this.dimensions), scales: new Float32Array(this.blockSlots) })
    const { values, scales } = this.blocks[Math.floor(slot / this.blockSlots)]!
    const at = slot % this.blockSlots
    let max = 0
    for (let d = 0; d < vector.length; d++) max = Math.max(max, Math.abs(vector[d]!))
    const step = max / 127
    for (let d = 0; d < vector.length; d++) values[d * this.blockSlots + at] = step === 0 ? 0 : Math.round(vector[d]! / step)
    scales[at] = step
    if (slot >= this.used) this.used = slot + 1
  }

  clear(slot: number): void {
    if (slot >= this.used) return
    const { values, scales } = this.blocks[Math.floor(slot / this.blockSlots)]!
    const at = slot % this.blockSlots
    for (let d = 0; d < this.dimensions; d++) values[d * this.blockSlots + at] = 0
    scales[at] = 0
  }

  /**
   * The `k` slots most similar to `query` (dot product; cosine for unit vectors) with a positive score,
   * best first, among those `accept` lets through.
   */
  nearest(query: Float32Array, k: number, accept?: (slot: number) => boolean): ScoredSlot[] {
    return nearestOf([{ store: this, query, weight: 1 }], k, accept)
  }

  /** Adds `weight` times each used slot's similarity to `query` to `sums` (at least `slots` long). */
  addScores(query: Float32Array, weight: number, sums: Float32Array): void {
    runToEnd(this.addScoreSteps(query, weight, sums))
  }

  /** addScores a block at a time, over the slots below `upTo` (those used when the scan began, by default). */
  *addScoreSteps(query: Float32Array, weight: number, sums: Float32Array, upTo = this.used): Generator<void> {
    if (query.length !== this.dimensions) throw new Error(`the query vector has ${query.length} dimensions, the store ${this.dimensions}`)
    const end = Math.min(upTo, this.used)
    for (let first = 0; first < end; first += this.blockSlots) {
      if (first > 0) yield
      this.addBlockScores(first, end, query, weight, sums)
    }
  }

  /**
   * Adds each used slot's similarity to its own query to `out` (at least `slots` long), a block at a time, over the
   * slots below `upTo`: `queries` holds one row of `dimensions` per group, and `groupOf[slot]` is the slot's row
   * (slots past its end take row 0).
   */
  *addScoreByGroupSteps(queries: Float32Array, groupOf: Uint16Array, out: Float32Array, upTo = this.used): Generator<void> {
    const end = Math.min(upTo, this.used)
    for (let first = 0; first < end; first += this.blockSlots) {
      if (first > 0) yield
      this.addBlockScoresByGroup(first, end, queries, groupOf, out)
    }
  }

  // The loops of a block, outside the generators: a generator's own loops run slower. The scratch is shared by
  // interleaved scans, so a block is scored whole between two yields.
  private addBlockScores(first: number, end: number, query: Float32Array, weight: number, sums: Float32Array): void {
    const size = this.blockSlots
    if (this.scratch.length < size) this.scratch = new Float32Array(size)
    const partial = this.scratch
    const { values, scales } = this.blocks[first / size]!
    const n = Math.min(size, end - first)
    partial.fill(0, 0, n)
    for (let d = 0; d < this.dimensions; d++) {
      const value = query[d]!
      if (value === 0) continue
      const from = d * size
      for (let i = 0; i < n; i++) partial[i]! += value * values[from + i]!
    }
    for (let i = 0; i < n; i++) sums[first + i]! += weight * partial[i]! * scales[i]!
  }

  private addBlockScoresByGroup(first: number, end: number, queries: Float32Array, groupOf: Uint16Array, out: Float32Array): void {
    const dimensions = this.dimensions
    const size = this.blockSlots
    if (this.scratch.length < size) this.scratch = new Float32Array(size)
    if (this.rowScratch.length < size) this.rowScratch = new Int32Array(size)
    const partial = this.scratch
    const { values, scales } = this.blocks[first / size]!
    const n = Math.min(size, end - first)
    partial.fill(0, 0, n)
    const rows = this.rowScratch
    for (let i = 0; i < n; i++) rows[i] = first + i < groupOf.length ? groupOf[first + i]! * dimensions : 0
    // Column by column, as addBlockScores: each slot's query value looked up by its row.
    for (let d = 0; d < dimensions; d++) {
      const from = d * size
      for (let i = 0; i < n; i++) partial[i]! += queries[rows[i]! + d]! * values[from + i]!
    }
    for (let i = 0; i < n; i++) out[first + i]! += partial[i]! * scales[i]!
  }

  /** Bytes of the used slots: scales, then each column. */
  serialise(): Uint8Array {
    const n = this.used
    const out = new Uint8Array(n * 4 + n * this.dimensions)
    const size = this.blockSlots
    for (let b = 0, first = 0; first < n; b++, first += size) {
      const { values, scales } = this.blocks[b]!
      const count = Math.min(size, n - first)
      out.set(new Uint8Array(scales.buffer, 0, count * 4), first * 4)
      for (let d = 0; d < this.dimensions; d++) out.set(values.subarray(d * size, d * size + count) as unknown as Uint8Array, n * 4 + d * n + first)
    }
    return out
  }

  static deserialise(dimensions: number, slots: number, bytes: Uint8Array, blockSlots = BLOCK_SLOTS): VectorStore {
    const building = VectorStore.building(dimensions, slots, bytes, blockSlots)
    for (;;) {
      const step = building.next()
      if (step.done) return step.value
    }
  }

  /** As deserialise, with `giveWay` (see time-slices.ts) after each block: a large store is taken in over several turns. */
  static async deserialiseGivingWay(dimensions: number, slots: number, bytes: Uint8Array, giveWay: () => Promise<void>): Promise<VectorStore> {
    const building = VectorStore.building(dimensions, slots, bytes, BLOCK_SLOTS)
    for (;;) {
      const step = building.next()
      if (step.done) return step.value
      await giveWay()
    }
  }

  /** Builds the store a block at a time, pausing after each. */
  private static *building(dimensions: number, slots: number, bytes: Uint8Array, blockSlots: number): Generator<void, VectorStore> {
    if (bytes.length !== slots * 4 + slots * dimensions) throw new Error(`vector block has ${bytes.length} bytes, expected ${slots * (4 + dimensions)}`)
    const store = new VectorStore(dimensions, blockSlots)
    for (let first = 0; first < slots; first += blockSlots) {
      const count = Math.min(blockSlots, slots - first)
      const block: Block = { values: new Int8Array(blockSlots * dimensions), scales: new Float32Array(blockSlots) }
      // Copied: the source buffer may not be 4-byte aligned for a Float32Array view.
      block.scales.set(new Float32Array(bytes.slice(first * 4, (first + count) * 4).buffer))
      for (let d = 0; d < dimensions; d++) {
        const from = slots * 4 + d * slots + first
        block.values.set(new Int8Array(bytes.buffer, bytes.byteOffset + from, count), d * blockSlots)
      }
      store.blocks.push(block)
      yield
    }
    store.used = slots
    return store
  }
}
