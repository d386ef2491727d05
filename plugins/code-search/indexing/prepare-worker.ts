/**
 * The preparation Worker: chunks files, counts each chunk's index terms, computes its hashed vector and encodes
 * each file's change as a snapshot stores it, on its own thread, so the event loop only inserts what comes back
 * (preparation.ts). A term's text is sent once, the first time the Worker meets it; afterwards only its number.
 */
import { hashedVectorOfTerms } from '../embeddings/index.ts'
import { encodeFileChange } from '../index/index.ts'
import { countTerms } from '../terms/index.ts'
import { chunkFile } from './chunker.ts'
import type { PreparationAnswer, PreparationRequest, PreparedChunk } from './preparation.ts'

declare const self: Worker

// Numbering restarts, and the event loop's table with it, once this many terms were sent.
const MAX_WIRE_TERMS = 1_000_000
let epoch = 1
let nextWireId = 0

// A second without work: the batches' garbage is collected on this thread, rather than held while the Worker idles.
const IDLE_COLLECT_MS = 1000
let idleCollection: ReturnType<typeof setTimeout> | undefined

self.onmessage = ({ data }: MessageEvent<PreparationRequest>) => {
  clearTimeout(idleCollection)
  idleCollection = setTimeout(() => Bun.gc(true), IDLE_COLLECT_MS)
  idleCollection.unref?.()
  try {
    const answer = prepare(data)
    const arrays = [
      answer.termIds,
      answer.termCounts,
      answer.termsPerChunk,
      answer.occurrences,
      answer.vectors,
      ...answer.files.flatMap((file) => (file.encoded ? [file.encoded] : [])),
    ]
    self.postMessage(
      answer,
      arrays.map((array) => array.buffer as ArrayBuffer),
    )
  } catch (error) {
    self.postMessage({ id: data.id, error: String((error as Error).message ?? error) } satisfies PreparationAnswer)
  }
}

function prepare({
  id,
  renumber,
  repositoryId,
  repositoryName,
  encode,
  dimensions,
  files,
  chunker,
}: PreparationRequest): Extract<PreparationAnswer, { files: unknown }> {
  const reset = renumber || nextWireId >= MAX_WIRE_TERMS
  if (reset) {
    epoch++
    nextWireId = 0
  }
  const firstNewId = nextWireId
  const newTerms: string[] = []
  const termIds: number[] = []
  const termCounts: number[] = []
  const termsPerChunk: number[] = []
  const occurrences: number[] = []
  const chunked = files.map((file) =>
    chunkFile(file.path, file.content, file.language, chunker).map((chunk) => ({ ...chunk, vector: new Float32Array(0) as Float32Array })),
  )
  // Every vector in one array, sent whole; each chunk keeps a view of its own.
  const vectors = new Float32Array(chunked.reduce((sum, chunks) => sum + chunks.length, 0) * dimensions)
  let at = 0
  for (const chunks of chunked)
    for (const chunk of chunks) {
      const counted = countTerms(chunk.content)
      for (let i = 0; i < counted.terms.length; i++) {
        const term = counted.terms[i]!
        if (term.wireEpoch !== epoch) {
          term.wireEpoch = epoch
          term.wireId = nextWireId++
          newTerms.push(term.text)
        }
        termIds.push(term.wireId)
        termCounts.push(counted.counts[i]!)
      }
      termsPerChunk.push(counted.terms.length)
      occurrences.push(counted.occurrences)
      chunk.vector = vectors.subarray(at * dimensions, (at + 1) * dimensions)
      chunk.vector.set(hashedVectorOfTerms(counted, dimensions))
      at++
    }
  return {
    id,
    reset,
    firstNewId,
    newTerms,
    files: files.map((file, i) => {
      const chunks = chunked[i]!
      // Without CR, each chunk is the file's text from the start of its first line: the event loop cuts it from
      // the text it already has rather than receiving a copy.
      const lineStarts = file.content.includes('\r') ? undefined : lineStartsOf(file.content)
      return {
        encoded: encode ? encodeFileChange({ repositoryId, repositoryName, path: file.path, language: file.language }, chunks) : undefined,
        chunks: chunks.map(
          ({ startLine, endLine, content, symbols }): PreparedChunk =>
            lineStarts
              ? { startLine, endLine, symbols, at: lineStarts[startLine - 1]!, length: content.length }
              : { startLine, endLine, symbols, at: -1, length: content.length, content },
        ),
      }
    }),
    termIds: Int32Array.from(termIds),
    termCounts: Int32Array.from(termCounts),
    termsPerChunk: Int32Array.from(termsPerChunk),
    occurrences: Int32Array.from(occurrences),
    vectors,
  }
}

function lineStartsOf(text: string): number[] {
  const starts = [0]
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) starts.push(at + 1)
  return starts
}
