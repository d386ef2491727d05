/**
 * The term space Worker: receives an organisation's chunks in batches, learns a term space per repository
 * (term-space.ts; repositories with too little code alone share one learnt from all of them) and embeds every chunk
 * in its repository's space, all on its own thread, and hands back the spaces and the chunks' vectors
 * (transferred, not copied).
 */
import { termsOf } from '../terms/index.ts'
import { chunkTermWeights, embedInTermSpace, learnTermSpace, postedTermSpace, type TermSpace } from './term-space.ts'
import type { TermSpaceAnswer, TermSpaceRequest } from './term-space-learner.ts'
import { VectorStore } from './vectors.ts'

declare const self: Worker

let slots: number[] = []
let repositoryIds: string[] = []
let chunkTerms: string[][] = []

/** Chunk numbers of each repository, in the order repositories first appear (slot order: the same in every process). */
function byRepository(): Map<string, number[]> {
  const chunks = new Map<string, number[]>()
  for (let i = 0; i < repositoryIds.length; i++) {
    const own = chunks.get(repositoryIds[i]!)
    if (own) own.push(i)
    else chunks.set(repositoryIds[i]!, [i])
  }
  return chunks
}

self.onmessage = ({ data }: MessageEvent<TermSpaceRequest>) => {
  if (data.kind === 'chunks') {
    for (let i = 0; i < data.contents.length; i++) {
      slots.push(data.slots[i]!)
      repositoryIds.push(data.repositoryIds[i]!)
      chunkTerms.push(termsOf(data.contents[i]!))
    }
    return
  }
  const { id, dimensions } = data
  try {
    const learnt: { space: TermSpace; repositories: string[]; chunks: number[] }[] = []
    const tooSmall: { repositories: string[]; chunks: number[] } = { repositories: [], chunks: [] }
    for (const [repositoryId, chunks] of byRepository()) {
      const space = learnTermSpace(
        chunks.map((i) => chunkTerms[i]!),
        { dimensions },
      )
      if (space) learnt.push({ space, repositories: [repositoryId], chunks })
      else {
        tooSmall.repositories.push(repositoryId)
        tooSmall.chunks.push(...chunks)
      }
    }
    if (tooSmall.chunks.length > 0) {
      const shared = learnTermSpace(
        tooSmall.chunks.map((i) => chunkTerms[i]!),
        { dimensions },
      )
      if (shared) learnt.push({ space: shared, ...tooSmall })
    }
    if (learnt.length === 0) return self.postMessage({ id, learnt: false } satisfies TermSpaceAnswer)
    const store = new VectorStore(dimensions)
    let slotCount = 0
    for (const slot of slots) slotCount = Math.max(slotCount, slot + 1)
    const spaceOfSlot = new Uint16Array(slotCount)
    for (const [at, { space, chunks }] of learnt.entries())
      for (const i of chunks) {
        store.set(slots[i]!, embedInTermSpace(space, chunkTermWeights(chunkTerms[i]!)))
        spaceOfSlot[slots[i]!] = at + 1
      }
    const spaces = learnt.map(({ space }) => postedTermSpace(space))
    const vectors = store.serialise()
    self.postMessage(
      { id, learnt: true, spaces, repositoriesOfSpace: learnt.map((l) => l.repositories), slots: store.slots, vectors, spaceOfSlot } satisfies TermSpaceAnswer,
      [
        ...spaces.flatMap((space) => [space.vectors.buffer as ArrayBuffer, space.weights.buffer as ArrayBuffer, space.termLengths.buffer as ArrayBuffer]),
        vectors.buffer as ArrayBuffer,
        spaceOfSlot.buffer as ArrayBuffer,
      ],
    )
  } catch (error) {
    self.postMessage({ id, error: String((error as Error).message ?? error) } satisfies TermSpaceAnswer)
  } finally {
    slots = []
    repositoryIds = []
    chunkTerms = []
  }
}
