/**
 * Files made ready to index on a Worker thread (prepare-worker.ts): chunked, each chunk's index terms counted
 * and its vector computed, and each file's change encoded for the snapshot, which is most of the CPU of
 * indexing. The event loop then only inserts, so an import of real code uses both cores. Only for embeddings
 * computed from the text alone (the offline hashed ones); a remote model is called from the event loop as before.
 */
import type { IndexedChunk } from '../index/index.ts'
import { detachedTerm, type CountedTerms, type Term } from '../terms/index.ts'
import type { ChunkerOptions } from './chunker.ts'

export interface PreparationRequest {
  id: number
  /** Number terms from 0 again (the event loop dropped its table of them). */
  renumber: boolean
  repositoryId: string
  repositoryName: string
  /** Whether to encode each file's change (the index is saved). */
  encode: boolean
  /** Of the hashed vectors. */
  dimensions: number
  files: { path: string; content: string; language?: string }[]
  chunker?: ChunkerOptions
}

/** A chunk as the Worker answers it: its text is the file's from `at` (`length` characters), or `content` when `at` is -1. */
export interface PreparedChunk {
  startLine: number
  endLine: number
  symbols: string[]
  at: number
  length: number
  content?: string
}

export type PreparationAnswer =
  | {
      id: number
      /** The Worker numbers its terms from 0 again: the table of earlier numbers no longer holds. */
      reset: boolean
      /** `newTerms[i]` is the text of term number `firstNewId + i`. */
      firstNewId: number
      newTerms: string[]
      /** Each file's chunks, in the order of the request, and its change as a snapshot stores it when asked. */
      files: { chunks: PreparedChunk[]; encoded?: Uint8Array }[]
      /** Per chunk, in order: `termsPerChunk[c]` term numbers and their counts, and the chunk's length in terms. */
      termIds: Int32Array
      termCounts: Int32Array
      termsPerChunk: Int32Array
      occurrences: Int32Array
      /** Every chunk's vector, one after the other. */
      vectors: Float32Array
    }
  | { id: number; error: string }

// In the standalone executable (`npm run build` names the Worker as an entry point) modules live in Bun's
// embedded file system, where a Worker is found by its path from the build's root.
const PREPARE_WORKER = import.meta.url.startsWith('file:///$bunfs/')
  ? './plugins/code-search/indexing/prepare-worker.ts'
  : new URL('./prepare-worker.ts', import.meta.url)

/** A file ready to apply: its chunks with their vectors and counted terms, and its change already encoded. */
export interface PreparedFile {
  chunks: IndexedChunk[]
  encoded?: Uint8Array
}

/**
 * A batch's files ready to apply, in the order given. Each file's chunks are built from the Worker's answer when
 * asked for, so the event loop builds them between its slices of inserting rather than a whole batch at once.
 */
export interface PreparedBatch {
  readonly length: number
  file(index: number): PreparedFile
}

export interface ChunkPreparer {
  prepare(request: Omit<PreparationRequest, 'id' | 'files' | 'renumber'>, files: PreparationRequest['files']): Promise<PreparedBatch>
  terminate(): void
}

let shared: ChunkPreparer | undefined
/** Imports holding the Worker (holdChunkPreparer). */
let holders = 0
/** Each Worker started and not yet closed, as the promise of its close. */
const alive = new Set<Promise<void>>()

/**
 * The process's preparation Worker, started on first use and kept while an import holds it (holdChunkPreparer).
 * It never keeps the process alive while idle.
 */
export function chunkPreparer(): ChunkPreparer {
  shared ??= startChunkPreparer()
  return shared
}

/**
 * Holds the Worker for one import until the answer is called. Once no import holds it, it is ended, as the
 * term-space and compaction Workers are: its heap (the vocabulary of everything it prepared, the garbage of
 * its last batches) would otherwise stay for the life of the process, tens of megabytes. Starting it again
 * takes tens of milliseconds, little beside an import large enough to be prepared there.
 */
export function holdChunkPreparer(): () => void {
  holders++
  let held = true
  return () => {
    if (!held) return
    held = false
    if (--holders > 0 || !shared) return
    shared.terminate()
    shared = undefined
  }
}

/** How many preparation Workers are alive, and a promise of their closing. */
export function preparationWorkers(): { alive: number; closed: Promise<unknown> } {
  return { alive: alive.size, closed: Promise.all(alive) }
}

/** Stops the process's Worker after a failure; the next import starts another. */
export function discardChunkPreparer(failed: ChunkPreparer): void {
  failed.terminate()
  if (shared === failed) shared = undefined
}

/** One Worker, started now, preparing one batch at a time in the order asked. */
function startChunkPreparer(): ChunkPreparer {
  const worker = new Worker(PREPARE_WORKER)
  // An idle Worker must not keep the process alive.
  worker.unref()
  const closed = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve(), { once: true }))
  alive.add(closed)
  void closed.then(() => alive.delete(closed))
  const waiting = new Map<number, { files: PreparationRequest['files']; dimensions: number; resolve(batch: PreparedBatch): void; reject(error: Error): void }>()
  // The Worker's term numbers: their texts, and as this thread's terms once a chunk needing them is built. A reset
  // starts new tables; a batch keeps those of its answer.
  let words: string[] = []
  let known: Term[] = []
  let nextId = 1
  // Set once idle: the table is dropped rather than kept between imports, and the next request asks the Worker
  // to number its terms afresh.
  let renumber = false
  const settle = (id: number) => {
    const caller = waiting.get(id)
    waiting.delete(id)
    if (waiting.size === 0) {
      worker.unref()
      words = []
      known = []
      renumber = true
    }
    return caller
  }
  // Answers arrive in the order asked, so the table of term numbers is always current when one is read.
  worker.onmessage = ({ data }: MessageEvent<PreparationAnswer>) => {
    if ('error' in data) return settle(data.id)?.reject(new Error(`chunk preparation failed: ${data.error}`))
    if (data.reset) {
      words = []
      known = []
    }
    for (let i = 0; i < data.newTerms.length; i++) words[data.firstNewId + i] = data.newTerms[i]!
    const caller = waiting.get(data.id)
    const texts = words
    const terms = known
    const termOfId = (id: number) => (terms[id] ??= detachedTerm(texts[id]!))
    const prepared = caller && preparedBatch(data, caller.files, termOfId, caller.dimensions)
    settle(data.id)
    if (caller) caller.resolve(prepared!)
  }
  worker.onerror = (event) => {
    for (const caller of waiting.values()) caller.reject(new Error(`chunk preparation worker failed: ${event.message}`))
    waiting.clear()
  }
  return {
    prepare(request, files) {
      const id = nextId++
      const answer = new Promise<PreparedBatch>((resolve, reject) => waiting.set(id, { files, dimensions: request.dimensions, resolve, reject }))
      worker.ref()
      try {
        worker.postMessage({ ...request, id, files, renumber } satisfies PreparationRequest)
        renumber = false
      } catch (error) {
        settle(id)?.reject(error as Error)
      }
      return answer
    },
    terminate: () => worker.terminate(),
  }
}

function preparedBatch(
  answer: Extract<PreparationAnswer, { files: unknown }>,
  sent: PreparationRequest['files'],
  termOfId: (id: number) => Term,
  dimensions: number,
): PreparedBatch {
  // Where each file's chunks and their terms start in the answer's arrays.
  const firstChunk = new Int32Array(answer.files.length + 1)
  const firstTerm = new Int32Array(answer.files.length + 1)
  for (let file = 0, chunk = 0, term = 0; file < answer.files.length; file++) {
    firstChunk[file] = chunk
    firstTerm[file] = term
    for (const end = chunk + answer.files[file]!.chunks.length; chunk < end; chunk++) term += answer.termsPerChunk[chunk]!
    firstChunk[file + 1] = chunk
    firstTerm[file + 1] = term
  }
  return {
    length: answer.files.length,
    file(file) {
      const { chunks, encoded } = answer.files[file]!
      let chunkAt = firstChunk[file]!
      let termAt = firstTerm[file]!
      return {
        encoded,
        chunks: chunks.map(({ startLine, endLine, symbols, at, length, content }) => {
          const count = answer.termsPerChunk[chunkAt]!
          const terms = new Array<Term>(count)
          for (let i = 0; i < count; i++) terms[i] = termOfId(answer.termIds[termAt + i]!)
          const counted: CountedTerms = { terms, counts: answer.termCounts.subarray(termAt, termAt + count), occurrences: answer.occurrences[chunkAt]! }
          const vector = answer.vectors.subarray(chunkAt * dimensions, (chunkAt + 1) * dimensions)
          termAt += count
          chunkAt++
          return { startLine, endLine, content: content ?? sent[file]!.content.slice(at, at + length), symbols, vector, counted }
        }),
      }
    },
  }
}
