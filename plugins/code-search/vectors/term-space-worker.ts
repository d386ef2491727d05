/**
 * The term space Worker: receives an organisation's chunks in batches, learns their term space (term-space.ts)
 * and embeds every chunk in it, all on its own thread, and hands back the space and the chunks' vectors
 * (transferred, not copied).
 */
import { termsOf } from '../terms/index.ts'
import { chunkTermWeights, embedInTermSpace, learnTermSpace } from './term-space.ts'
import type { TermSpaceAnswer, TermSpaceRequest } from './term-space-learner.ts'
import { VectorStore } from './vectors.ts'

declare const self: Worker

let slots: number[] = []
let chunkTerms: string[][] = []

self.onmessage = ({ data }: MessageEvent<TermSpaceRequest>) => {
  if (data.kind === 'chunks') {
    for (let i = 0; i < data.contents.length; i++) {
      slots.push(data.slots[i]!)
      chunkTerms.push(termsOf(data.contents[i]!))
    }
    return
  }
  const { id, dimensions } = data
  try {
    const space = learnTermSpace(chunkTerms, { dimensions })
    if (!space) return self.postMessage({ id, learnt: false } satisfies TermSpaceAnswer)
    const store = new VectorStore(dimensions)
    for (let i = 0; i < slots.length; i++) store.set(slots[i]!, embedInTermSpace(space, chunkTermWeights(chunkTerms[i]!)))
    const { vocabulary, vectors: termVectors, weights } = space
    const vectors = store.serialise()
    self.postMessage(
      { id, learnt: true, space: { dimensions, vocabulary, vectors: termVectors, weights }, slots: store.slots, vectors } satisfies TermSpaceAnswer,
      [termVectors.buffer as ArrayBuffer, weights.buffer as ArrayBuffer, vectors.buffer as ArrayBuffer],
    )
  } catch (error) {
    self.postMessage({ id, error: String((error as Error).message ?? error) } satisfies TermSpaceAnswer)
  } finally {
    slots = []
    chunkTerms = []
  }
}
