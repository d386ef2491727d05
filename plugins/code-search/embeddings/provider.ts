/** Where chunk and query vectors come from. The index only needs this interface. */

export interface EmbeddingProvider {
  /** Names the model and its settings; a snapshot made with another one cannot be reused. */
  readonly id: string
  /**
   * Set when a vector is computed from the text alone, the same on any thread (the offline hashed features):
   * indexing may then embed on a Worker beside the event loop.
   */
  readonly hashedDimensions?: number
  /** One L2-normalised vector per text, in order, all of the same length. */
  embed(texts: readonly string[], options?: { signal?: AbortSignal }): Promise<Float32Array[]>
}

/** Scales `vector` in place to unit length (a zero vector stays zero). */
export function normalise(vector: Float32Array): Float32Array {
  let sum = 0
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!
  if (sum > 0) {
    const scale = 1 / Math.sqrt(sum)
    for (let i = 0; i < vector.length; i++) vector[i]! *= scale
  }
  return vector
}
