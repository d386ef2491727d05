/**
 * Offline embeddings: hashed sub-word features, no network and no model file.
 *
 * The text's index terms (terms/terms.ts: identifiers split into their words, stemmed, plus the compound
 * identifier) and every character trigram of each term are hashed into one of `dimensions` buckets
 * with a hashed sign (the "hashing trick"); bucket values are damped (log) so one word repeated fifty
 * times does not drown the rest, and the vector is scaled to unit length.
 *
 * Good for: finding code by the words of its identifiers whatever their spelling (camelCase, snake_case,
 * kebab-case), partial and misspelt words (trigrams: "authentcate" still lands near `authenticate`), and
 * ranking chunks that share many query words without needing every one. Not good for meaning: "login" does
 * not find `authenticate` unless the words co-occur; configure an embeddings model (EMBEDDINGS_MODEL) for
 * that. Deterministic, so a snapshot stays valid across restarts and machines.
 */
import { countedTermsOf, type CountedTerms } from '../terms/index.ts'
import { normalise, type EmbeddingProvider } from './provider.ts'

export interface HashedEmbeddingsOptions {
  /** Buckets per vector. Default 256; more buckets, fewer collisions, more memory. */
  dimensions?: number
}

const WORD_WEIGHT = 1
const TRIGRAM_WEIGHT = 0.5
// Seeds keep a word and a trigram with the same letters apart.
const WORD_SEED = 0x811c9dc5
const TRIGRAM_SEED = 0x85ebca6b
const BEGIN = 2 // marks the start and end of a word in its trigrams
const END = 3

function fnv(seed: number, text: string): number {
  let h = seed
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h
}

// Murmur3's finaliser: FNV's low bits are weak, and the low bits pick the bucket.
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/** The buckets one term adds to, its word first and then its trigrams, each as bucket + 1, negative for a negative sign. */
function bucketsOf(term: string, dimensions: number): Int32Array {
  const buckets = new Int32Array(term.length + 1)
  const at = (hash: number) => {
    const h = mix(hash)
    const bucket = ((h >>> 0) % dimensions) + 1
    return h < 0 ? -bucket : bucket
  }
  buckets[0] = at(fnv(WORD_SEED, term))
  // Trigrams of \x02term\x03, hashed from char codes without building substrings.
  let a = BEGIN
  let b = term.charCodeAt(0)
  for (let i = 1; i <= term.length; i++) {
    const c = i < term.length ? term.charCodeAt(i) : END
    buckets[i] = at(Math.imul(Math.imul(Math.imul(TRIGRAM_SEED ^ a, 0x01000193) ^ b, 0x01000193) ^ c, 0x01000193))
    a = b
    b = c
  }
  return buckets
}

/** Embeds one text; exported for the index benchmark and tests. */
export function hashedVector(text: string, dimensions: number): Float32Array {
  return hashedVectorOfTerms(countedTermsOf(text), dimensions)
}

/** The vector of a text whose terms are counted already. */
export function hashedVectorOfTerms({ terms, counts }: CountedTerms, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions)
  // Each distinct term once, times its count: every weight is a multiple of a half, so every sum is exact in a
  // float32 and the order of the additions does not change the vector.
  for (let t = 0; t < terms.length; t++) {
    const term = terms[t]!
    // Kept on the term: vocabularies repeat, and hashing a term's trigrams was most of the work.
    if (term.bucketsOf !== dimensions) {
      term.buckets = bucketsOf(term.text, dimensions)
      term.bucketsOf = dimensions
    }
    const buckets = term.buckets!
    const count = counts[t]!
    for (let i = 0; i < buckets.length; i++) {
      const bucket = buckets[i]!
      const weight = (i === 0 ? WORD_WEIGHT : TRIGRAM_WEIGHT) * count
      if (bucket > 0) vector[bucket - 1]! += weight
      else vector[-bucket - 1]! -= weight
    }
  }
  for (let i = 0; i < dimensions; i++) {
    const v = vector[i]!
    if (v !== 0) vector[i] = v > 0 ? damped(v) : -damped(-v)
  }
  return normalise(vector)
}

// Every bucket value is a sum of word and trigram weights (1 and 0.5), so a multiple of a half: the damping of
// the usual ones is looked up, the same values Math.log1p gives.
const DAMPED_HALVES = Float64Array.from({ length: 4096 }, (_, halves) => Math.log1p(halves / 2))
const damped = (v: number) => {
  const halves = v * 2
  return halves < DAMPED_HALVES.length && Number.isInteger(halves) ? DAMPED_HALVES[halves]! : Math.log1p(v)
}

export function createHashedEmbeddings(options: HashedEmbeddingsOptions = {}): EmbeddingProvider {
  const dimensions = options.dimensions ?? 256
  if (!Number.isInteger(dimensions) || dimensions < 16 || dimensions > 4096) throw new Error(`hashed embeddings: dimensions must be 16-4096, got ${dimensions}`)
  return {
    id: `hashed-subwords-v1/${dimensions}`,
    hashedDimensions: dimensions,
    async embed(texts) {
      return texts.map((text) => hashedVector(text, dimensions))
    },
  }
}
