/**
 * Learns term spaces on a Worker (term-space-worker.ts), one at a time: an organisation's chunks go to it in
 * batches of 64 KiB with a turn of the event loop between them, and the learnt space's lookup table is built
 * a few thousand terms per turn, so even a large index is handed over and back without stalling requests; the
 * learning itself never runs on the event loop.
 */
import { nextTurn } from '../../../src/time-slices.ts'
import { TERM_SPACE_DIMENSIONS, TERMS_PER_TURN } from '../tuning.ts'
import { Meaning } from './meaning.ts'
import type { PostedTermSpace, TermSpace } from './term-space.ts'
import { VectorStore } from './vectors.ts'

/** Some of the chunks term spaces are learnt from: their slots, repositories and texts, in slot order. */
export interface MeaningBatch {
  slots: Int32Array
  repositoryIds: string[]
  contents: string[]
}

export type TermSpaceRequest =
  | { kind: 'chunks'; slots: Int32Array; repositoryIds: string[]; contents: string[] }
  | { kind: 'learn'; id: number; dimensions: number }

export type TermSpaceAnswer =
  | {
      id: number
      learnt: true
      /** A space per repository, or shared by repositories with too little code alone. */
      spaces: PostedTermSpace[]
      /** The repositories of each space. */
      repositoriesOfSpace: string[][]
      slots: number
      vectors: Uint8Array
      /** Space of each slot, plus one (0: none). */
      spaceOfSlot: Uint16Array
    }
  | { id: number; learnt: false }
  | { id: number; error: string }

// In the standalone executable (`npm run build` names the Worker as an entry point) modules live in Bun's
// embedded file system, where a Worker is found by its path from the build's root.
const TERM_SPACE_WORKER = import.meta.url.startsWith('file:///$bunfs/')
  ? './plugins/code-search/vectors/term-space-worker.ts'
  : new URL('./term-space-worker.ts', import.meta.url)

export interface TermSpaceLearner {
  /**
   * The spaces of the chunks' repositories and each chunk's vector in its own; undefined when there is too little code to learn from.
   * Aborting `signal` drops a space still waiting its turn, and stops the Worker if it is learning this one.
   */
  learn(source: Iterable<MeaningBatch>, signal?: AbortSignal): Promise<Meaning | undefined>
}

let shared: TermSpaceLearner | undefined

/** The process's learner, its Worker started on first use; it never keeps the process alive while idle. */
export function termSpaceLearner(): TermSpaceLearner {
  shared ??= startLearner()
  return shared
}

function startLearner(): TermSpaceLearner {
  let worker: Worker | undefined
  let nextId = 1
  let queue: Promise<unknown> = Promise.resolve()
  /** Spaces asked for and not yet answered. */
  let asked = 0
  const waiting = new Map<number, { resolve(answer: TermSpaceAnswer): void; reject(error: Error): void }>()

  const started = () => {
    if (worker) return worker
    const created = new Worker(TERM_SPACE_WORKER)
    created.unref()
    created.onmessage = ({ data }: MessageEvent<TermSpaceAnswer>) => {
      waiting.get(data.id)?.resolve(data)
      waiting.delete(data.id)
      if (waiting.size === 0) created.unref()
    }
    // A failed Worker is replaced for the next space.
    created.onerror = (event) => stop(created, new Error(`term space worker failed: ${event.message}`))
    return (worker = created)
  }

  /** Stops the Worker, failing what it was doing; the next space starts another. */
  const stop = (target: Worker, reason: Error) => {
    for (const caller of waiting.values()) caller.reject(reason)
    waiting.clear()
    target.terminate()
    if (worker === target) worker = undefined
  }

  async function learnNow(source: Iterable<MeaningBatch>, signal: AbortSignal | undefined): Promise<Meaning | undefined> {
    signal?.throwIfAborted()
    const target = started()
    const id = nextId++
    const answer = new Promise<TermSpaceAnswer>((resolve, reject) => waiting.set(id, { resolve, reject }))
    // Awaited only once every batch is sent; a stop before then is seen there, not reported as unhandled.
    answer.catch(() => undefined)
    const abort = () => stop(target, signal!.reason as Error)
    signal?.addEventListener('abort', abort)
    target.ref()
    try {
      for (const batch of source) {
        signal?.throwIfAborted()
        target.postMessage({ kind: 'chunks', slots: batch.slots, repositoryIds: batch.repositoryIds, contents: batch.contents } satisfies TermSpaceRequest)
        await nextTurn()
      }
      target.postMessage({ kind: 'learn', id, dimensions: TERM_SPACE_DIMENSIONS } satisfies TermSpaceRequest)
    } catch (error) {
      // The Worker holds some of this source's chunks: it is not fit to learn the next one.
      stop(target, error as Error)
      signal?.removeEventListener('abort', abort)
      throw error
    }
    const data = await answer.finally(() => signal?.removeEventListener('abort', abort))
    if ('error' in data) throw new Error(`learning the term space failed: ${data.error}`)
    if (!data.learnt) return undefined
    const spaces: TermSpace[] = []
    const spaceOfRepository = new Map<string, number>()
    let built = 0
    for (const [at, { dimensions, terms, termLengths, vectors, weights }] of data.spaces.entries()) {
      const vocabulary: string[] = []
      const rows = new Map<string, number>()
      for (let row = 0, from = 0; row < termLengths.length; row++) {
        const term = terms.slice(from, (from += termLengths[row]!))
        vocabulary.push(term)
        rows.set(term, row)
        if (++built % TERMS_PER_TURN === 0) await nextTurn()
      }
      spaces.push({ dimensions, vocabulary, rows, vectors, weights })
      for (const repositoryId of data.repositoriesOfSpace[at]!) spaceOfRepository.set(repositoryId, at)
    }
    // A block of slots a turn: the vectors of a large index took several milliseconds at once.
    const store = await VectorStore.deserialiseGivingWay(TERM_SPACE_DIMENSIONS, data.slots, data.vectors, nextTurn)
    return new Meaning(spaces, spaceOfRepository, store, data.spaceOfSlot)
  }

  return {
    learn(source, signal) {
      asked++
      // One at a time: the Worker collects one source's chunks before it learns.
      const run = queue
        .then(() => learnNow(source, signal))
        .finally(() => {
          // Ended once idle: its heap, grown to the last index's size, is not given back to the system while it lives.
          if (--asked === 0 && worker) {
            worker.terminate()
            worker = undefined
          }
        })
      queue = run.catch(() => undefined)
      return run
    },
  }
}
