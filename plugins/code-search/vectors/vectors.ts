/**
 * Chunk vectors of one organisation, by slot, for exact nearest-neighbour search.
 *
 * Stored one column per dimension and quantised to 8 bits with a scale per vector: a query's score is a
 * few tight loops over typed arrays, and only over the query's non-zero dimensions, which for the hashed
 * embeddings of a short query is a small fraction of them. 50,000 chunks of 256 dimensions take 12.8 MB.
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

let sumsScratch = new Float32Array(1024)

/**
 * The `k` slots of best summed score over the parts (stores addressed by the same slots), positive scores only,
 * best first, among those `accept` lets through.
 */
export function nearestOf(parts: readonly VectorQuery[], k: number, accept?: (slot: number) => boolean): ScoredSlot[] {
  const n = Math.max(0, ...parts.map((part) => part.store.slots))
  if (n === 0 || k <= 0) return []
  if (sumsScratch.length < n) sumsScratch = new Float32Array(Math.max(n, sumsScratch.length * 2))
  const sums = sumsScratch
  sums.fill(0, 0, n)
  for (const { store, query, weight } of parts) store.addScores(query, weight, sums)
  // Top k by insertion into a short sorted list: k is small, so this beats sorting n scores.
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

export class VectorStore {
  private columns: Int8Array[]
  /** Per slot, what one quantisation step is worth; 0 for an empty slot. */
  private scales: Float32Array
  private scratch = new Float32Array(0)
  /** One past the highest slot ever set. */
  private used = 0

  constructor(
    readonly dimensions: number,
    capacity = 1024,
  ) {
    this.columns = Array.from({ length: dimensions }, () => new Int8Array(capacity))
    this.scales = new Float32Array(capacity)
  }

  get capacity(): number {
    return this.scales.length
  }

  get slots(): number {
    return this.used
  }

  set(slot: number, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new Error(`vector has ${vector.length} dimensions, the index ${this.dimensions}`)
    if (slot >= this.capacity) this.grow(slot + 1)
    let max = 0
    for (let d = 0; d < vector.length; d++) max = Math.max(max, Math.abs(vector[d]!))
    const step = max / 127
    for (let d = 0; d < vector.length; d++) this.columns[d]![slot] = step === 0 ? 0 : Math.round(vector[d]! / step)
    this.scales[slot] = step
    if (slot >= this.used) this.used = slot + 1
  }

  clear(slot: number): void {
    if (slot >= this.used) return
    for (const column of this.columns) column[slot] = 0
    this.scales[slot] = 0
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
    if (query.length !== this.dimensions) throw new Error(`the query vector has ${query.length} dimensions, the store ${this.dimensions}`)
    const n = this.used
    if (this.scratch.length < n) this.scratch = new Float32Array(this.capacity)
    const partial = this.scratch
    partial.fill(0, 0, n)
    for (let d = 0; d < this.dimensions; d++) {
      const value = query[d]!
      if (value === 0) continue
      const column = this.columns[d]!
      for (let slot = 0; slot < n; slot++) partial[slot]! += value * column[slot]!
    }
    const scales = this.scales
    for (let slot = 0; slot < n; slot++) sums[slot]! += weight * partial[slot]! * scales[slot]!
  }

  private grow(minimum: number): void {
    let capacity = this.capacity
    while (capacity < minimum) capacity *= 2
    this.columns = this.columns.map((column) => {
      const wider = new Int8Array(capacity)
      wider.set(column)
      return wider
    })
    const scales = new Float32Array(capacity)
    scales.set(this.scales)
    this.scales = scales
  }

  /** Bytes of the used slots: scales, then each column. */
  serialise(): Uint8Array {
    const n = this.used
    const out = new Uint8Array(n * 4 + n * this.dimensions)
    out.set(new Uint8Array(this.scales.buffer, 0, n * 4), 0)
    for (let d = 0; d < this.dimensions; d++) out.set(new Uint8Array(this.columns[d]!.buffer, 0, n), n * 4 + d * n)
    return out
  }

  static deserialise(dimensions: number, slots: number, bytes: Uint8Array): VectorStore {
    if (bytes.length !== slots * 4 + slots * dimensions) throw new Error(`vector block has ${bytes.length} bytes, expected ${slots * (4 + dimensions)}`)
    const store = new VectorStore(dimensions, Math.max(1024, slots))
    // Copied: the source buffer may not be 4-byte aligned for a Float32Array view.
    store.scales.set(new Float32Array(bytes.slice(0, slots * 4).buffer))
    for (let d = 0; d < dimensions; d++) store.columns[d]!.set(bytes.subarray(slots * 4 + d * slots, slots * 4 + (d + 1) * slots))
    store.used = slots
    return store
  }
}
