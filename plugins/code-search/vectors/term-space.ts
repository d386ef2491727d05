/**
 * A term space learnt from an organisation's own code: every index term gets a short dense vector such that
 * terms used in the same places lie close together ("eject" near "interceptor" and "handler" where the code
 * says `this.handlers[id] = null` in `eject(id)`), so a question finds code whose words it never uses.
 *
 * The classic distributional method: counts of terms within a few terms of each other in the chunks' term
 * sequences (weighted by 1/distance), turned into positive pointwise mutual information (with the usual 0.75
 * smoothing of context counts), factorised by a randomised truncated eigendecomposition of that symmetric
 * matrix (a few power iterations, Cholesky QR, then Jacobi on the small projected matrix). A term's vector is
 * its row of U·sqrt(Λ), scaled to unit length. A text is the sum of its terms' vectors, each weighted by
 * smooth inverse frequency a/(a + p(term)) so that words found everywhere say little, scaled to unit length.
 *
 * Deterministic for the same chunks in the same order (a seeded start), so every process learns the same space.
 * Pure computation: it runs on a Worker (term-space-worker.ts).
 */
import { normalise } from '../embeddings/index.ts'
import type { CountedTerms } from '../terms/index.ts'

export interface TermSpace {
  readonly dimensions: number
  /** The terms, by row. */
  readonly vocabulary: readonly string[]
  /** Term -> its row in `vectors` and `weights`. */
  readonly rows: ReadonlyMap<string, number>
  /** Row-major, `dimensions` numbers per term, each row of unit length. */
  readonly vectors: Float32Array
  /** Smooth inverse frequency of each term. */
  readonly weights: Float32Array
}

/**
 * A term space as posted between threads: its terms joined in one string with their lengths beside (a string is
 * copied in one piece where tens of thousands of strings would each be taken in on the receiving thread), its
 * vocabulary and table of rows built again on the other side.
 */
export interface PostedTermSpace {
  dimensions: number
  terms: string
  termLengths: Int32Array
  vectors: Float32Array
  weights: Float32Array
}

/** The space as PostedTermSpace holds it. */
export function postedTermSpace({ dimensions, vocabulary, vectors, weights }: TermSpace): PostedTermSpace {
  return { dimensions, terms: vocabulary.join(''), termLengths: Int32Array.from(vocabulary, (term) => term.length), vectors, weights }
}

export interface TermSpaceOptions {
  /** Default 32. */
  dimensions?: number
  /** Terms counted together when at most this far apart. Default 5. */
  window?: number
  /** The most frequent terms kept. Default 30,000. */
  maxTerms?: number
}

/** Below this many terms seen at least twice, there is too little code to learn from. */
export const MIN_VOCABULARY = 100
// Smooth inverse frequency's a: a term making up one in a thousand of all occurrences weighs half.
const SIF_A = 1e-3
const POWER_ITERATIONS = 2
const OVERSAMPLING = 8

/**
 * The vector of weighted terms (a chunk's counts, damped; a question's terms with their weights) in the space,
 * unit length; all zeros when the space knows none of them.
 */
export function embedInTermSpace(space: TermSpace, terms: Iterable<[string, number]>): Float32Array {
  const vector = new Float32Array(space.dimensions)
  for (const [term, weight] of terms) addTerm(space, vector, term, weight)
  return normalise(vector)
}

/**
 * A chunk's vector from its counted terms (each weighs 1 + ln(count)), written into `scratch` (at least the
 * space's dimensions long) and answered as a view of it: for the index, which copies it at once.
 */
export function embedCountedInTermSpace(space: TermSpace, counted: CountedTerms, scratch: Float32Array): Float32Array {
  const vector = scratch.subarray(0, space.dimensions)
  vector.fill(0)
  for (let t = 0; t < counted.terms.length; t++) addTerm(space, vector, counted.terms[t]!.text, 1 + Math.log(counted.counts[t]!))
  return normalise(vector)
}

/** Adds the term's vector, times `weight` and its smooth inverse frequency, to `vector`; nothing for a term the space lacks. */
function addTerm(space: TermSpace, vector: Float32Array, term: string, weight: number): void {
  const row = space.rows.get(term)
  if (row === undefined) return
  const { dimensions, vectors } = space
  const scale = weight * space.weights[row]!
  const at = row * dimensions
  for (let d = 0; d < dimensions; d++) vector[d]! += scale * vectors[at + d]!
}

/** A chunk's terms (termsOf) as embedInTermSpace weighs them: each distinct term once, 1 + ln(count). */
export function chunkTermWeights(terms: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
  for (const [term, count] of counts) counts.set(term, 1 + Math.log(count))
  return counts
}

/** Learns the space from the chunks' term sequences (termsOf); undefined when there is too little code. */
export function learnTermSpace(chunkTerms: readonly (readonly string[])[], options: TermSpaceOptions = {}): TermSpace | undefined {
  const dimensions = options.dimensions ?? 32
  const window = options.window ?? 5
  const maxTerms = options.maxTerms ?? 30_000

  const frequency = new Map<string, number>()
  let occurrences = 0
  for (const terms of chunkTerms)
    for (const term of terms) {
      frequency.set(term, (frequency.get(term) ?? 0) + 1)
      occurrences++
    }
  const vocabulary = [...frequency]
    .filter(([, count]) => count >= 2)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, maxTerms)
    .map(([term]) => term)
  const size = vocabulary.length
  if (size < Math.max(MIN_VOCABULARY, 2 * dimensions)) return undefined
  const rowOf = new Map(vocabulary.map((term, row) => [term, row]))

  const pairs = new PairCounts()
  const rowSums = new Float64Array(size)
  let rowIds = new Int32Array(256)
  for (const terms of chunkTerms) {
    if (rowIds.length < terms.length) rowIds = new Int32Array(terms.length * 2)
    for (let i = 0; i < terms.length; i++) rowIds[i] = rowOf.get(terms[i]!) ?? -1
    for (let i = 0; i < terms.length; i++) {
      const a = rowIds[i]!
      if (a < 0) continue
      for (let j = i + 1; j <= i + window && j < terms.length; j++) {
        const b = rowIds[j]!
        if (b < 0 || b === a) continue
        const weight = 1 / (j - i)
        pairs.add(Math.min(a, b), Math.max(a, b), weight)
        rowSums[a]! += weight
        rowSums[b]! += weight
      }
    }
  }
  const matrix = ppmiMatrix(pairs, rowSums)
  const { vectors } = topEigenvectors(matrix, size, dimensions)

  const weights = new Float32Array(size)
  for (let row = 0; row < size; row++) weights[row] = SIF_A / (SIF_A + frequency.get(vocabulary[row]!)! / occurrences)
  return { dimensions, vocabulary, rows: rowOf, vectors, weights }
}

/** Symmetric pair weights in an open-addressing table: a Map of number keys is several times slower here. */
class PairCounts {
  capacity = 1 << 16
  first = new Int32Array(this.capacity).fill(-1)
  second = new Int32Array(this.capacity)
  weight = new Float32Array(this.capacity)
  used = 0

  add(a: number, b: number, weight: number): void {
    if (this.used * 2 >= this.capacity) this.grow()
    const slot = this.slotOf(a, b)
    if (this.first[slot] === -1) {
      this.first[slot] = a
      this.second[slot] = b
      this.used++
    }
    this.weight[slot]! += weight
  }

  private slotOf(a: number, b: number): number {
    const mask = this.capacity - 1
    let slot = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b)) & mask
    while (this.first[slot] !== -1 && (this.first[slot] !== a || this.second[slot] !== b)) slot = (slot + 1) & mask
    return slot
  }

  private grow(): void {
    const { first, second, weight } = this
    this.capacity *= 2
    this.first = new Int32Array(this.capacity).fill(-1)
    this.second = new Int32Array(this.capacity)
    this.weight = new Float32Array(this.capacity)
    for (let i = 0; i < first.length; i++) {
      if (first[i] === -1) continue
      const slot = this.slotOf(first[i]!, second[i]!)
      this.first[slot] = first[i]!
      this.second[slot] = second[i]!
      this.weight[slot] = weight[i]!
    }
  }
}

/** A symmetric sparse matrix, compressed rows. */
interface SparseRows {
  starts: Int32Array
  columns: Int32Array
  values: Float32Array
}

function ppmiMatrix(pairs: PairCounts, rowSums: Float64Array): SparseRows {
  const size = rowSums.length
  const context = new Float64Array(size)
  let contextTotal = 0
  for (let i = 0; i < size; i++) contextTotal += context[i] = rowSums[i]! ** 0.75
  const kept: number[] = []
  const counts = new Int32Array(size + 1)
  for (let slot = 0; slot < pairs.capacity; slot++) {
    const a = pairs.first[slot]!
    if (a === -1) continue
    const b = pairs.second[slot]!
    const together = pairs.weight[slot]!
    // Averaged both ways round, so the matrix stays symmetric with the smoothed contexts.
    const pmi = (Math.log((together * contextTotal) / (rowSums[a]! * context[b]!)) + Math.log((together * contextTotal) / (rowSums[b]! * context[a]!))) / 2
    if (!(pmi > 0)) continue
    kept.push(slot, pmi)
    counts[a + 1]!++
    counts[b + 1]!++
  }
  for (let i = 0; i < size; i++) counts[i + 1]! += counts[i]!
  const columns = new Int32Array(counts[size]!)
  const values = new Float32Array(counts[size]!)
  const next = counts.slice(0, size)
  for (let at = 0; at < kept.length; at += 2) {
    const slot = kept[at]!
    const value = kept[at + 1]!
    const a = pairs.first[slot]!
    const b = pairs.second[slot]!
    columns[next[a]!] = b
    values[next[a]!++] = value
    columns[next[b]!] = a
    values[next[b]!++] = value
  }
  return { starts: counts, columns, values }
}

/** The `dimensions` eigenvectors of largest eigenvalue, as unit rows of U·sqrt(Λ), row-major. */
function topEigenvectors(matrix: SparseRows, size: number, dimensions: number): { vectors: Float32Array } {
  const width = Math.min(dimensions + OVERSAMPLING, size)
  // Rows of `size` × `width`, row-major: the product below then walks contiguous memory.
  const multiply = (x: Float64Array) => {
    const y = new Float64Array(size * width)
    for (let i = 0; i < size; i++) {
      const out = i * width
      for (let p = matrix.starts[i]!; p < matrix.starts[i + 1]!; p++) {
        const value = matrix.values[p]!
        const from = matrix.columns[p]! * width
        for (let c = 0; c < width; c++) y[out + c]! += value * x[from + c]!
      }
    }
    return y
  }
  let basis = new Float64Array(size * width)
  let seed = 0x2545f491
  for (let i = 0; i < basis.length; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    basis[i] = seed / 4294967296 - 0.5
  }
  for (let iteration = 0; iteration <= POWER_ITERATIONS; iteration++) {
    basis = multiply(basis)
    orthonormalise(basis, size, width)
  }
  // The small matrix Qᵀ M Q, whose eigenvectors turn Q's columns into M's.
  const small = crossProduct(basis, multiply(basis), size, width)
  const { values, vectors: eigen } = symmetricEigen(small, width)
  const order = Array.from(values.keys())
    .sort((a, b) => values[b]! - values[a]!)
    .slice(0, dimensions)
  // Column d of the projection: eigenvector order[d] times sqrt of its eigenvalue.
  const projection = new Float64Array(width * dimensions)
  for (let d = 0; d < order.length; d++) {
    const e = order[d]!
    const scale = Math.sqrt(Math.max(values[e]!, 0))
    for (let j = 0; j < width; j++) projection[j * dimensions + d] = eigen[j * width + e]! * scale
  }
  const vectors = new Float32Array(size * dimensions)
  const row = new Float64Array(dimensions)
  for (let i = 0; i < size; i++) {
    row.fill(0)
    const at = i * width
    for (let j = 0; j < width; j++) {
      const q = basis[at + j]!
      if (q === 0) continue
      const from = j * dimensions
      for (let d = 0; d < dimensions; d++) row[d]! += q * projection[from + d]!
    }
    let sum = 0
    for (let d = 0; d < dimensions; d++) sum += row[d]! * row[d]!
    const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0
    for (let d = 0; d < dimensions; d++) vectors[i * dimensions + d] = row[d]! * scale
  }
  return { vectors }
}

/** Xᵀ Y for two row-major matrices of `rows` × `width`. */
function crossProduct(x: Float64Array, y: Float64Array, rows: number, width: number): Float64Array {
  const product = new Float64Array(width * width)
  for (let i = 0; i < rows; i++) {
    const at = i * width
    for (let a = 0; a < width; a++) {
      const xa = x[at + a]!
      if (xa === 0) continue
      for (let b = 0; b < width; b++) product[a * width + b]! += xa * y[at + b]!
    }
  }
  return product
}

/** Orthonormal columns in place by Cholesky QR, done twice for accuracy. */
function orthonormalise(x: Float64Array, rows: number, width: number): void {
  for (let pass = 0; pass < 2; pass++) {
    const gram = crossProduct(x, x, rows, width)
    const lower = new Float64Array(width * width)
    for (let a = 0; a < width; a++)
      for (let b = 0; b <= a; b++) {
        let sum = gram[a * width + b]!
        for (let c = 0; c < b; c++) sum -= lower[a * width + c]! * lower[b * width + c]!
        lower[a * width + b] = a === b ? Math.sqrt(Math.max(sum, 1e-12)) : sum / lower[b * width + b]!
      }
    // X ← X L⁻ᵀ, row by row (forward substitution).
    for (let i = 0; i < rows; i++) {
      const at = i * width
      for (let a = 0; a < width; a++) {
        let sum = x[at + a]!
        for (let c = 0; c < a; c++) sum -= lower[a * width + c]! * x[at + c]!
        x[at + a] = sum / lower[a * width + a]!
      }
    }
  }
}

/** Eigenvalues and eigenvectors (columns, row-major) of a small symmetric matrix, by cyclic Jacobi rotations. */
function symmetricEigen(matrix: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  const a = Float64Array.from(matrix)
  // Symmetrised: the projected matrix is symmetric only up to rounding.
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) a[i * n + j] = a[j * n + i] = (a[i * n + j]! + a[j * n + i]!) / 2
  const v = new Float64Array(n * n)
  for (let i = 0; i < n; i++) v[i * n + i] = 1
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0
    let diagonal = 0
    for (let p = 0; p < n; p++) {
      diagonal += a[p * n + p]! ** 2
      for (let q = p + 1; q < n; q++) off += a[p * n + q]! ** 2
    }
    if (off <= 1e-20 * diagonal) break
    for (let p = 0; p < n; p++)
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!
        if (Math.abs(apq) < 1e-300) continue
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq)
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1))
        const c = 1 / Math.sqrt(t * t + 1)
        const s = t * c
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p]!
          const akq = a[k * n + q]!
          a[k * n + p] = c * akp - s * akq
          a[k * n + q] = s * akp + c * akq
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k]!
          const aqk = a[q * n + k]!
          a[p * n + k] = c * apk - s * aqk
          a[q * n + k] = s * apk + c * aqk
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p]!
          const vkq = v[k * n + q]!
          v[k * n + p] = c * vkp - s * vkq
          v[k * n + q] = s * vkp + c * vkq
        }
      }
  }
  const values = new Float64Array(n)
  for (let i = 0; i < n; i++) values[i] = a[i * n + i]!
  return { values, vectors: v }
}
