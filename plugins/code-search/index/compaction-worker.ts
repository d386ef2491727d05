/**
 * The snapshot Worker. Compaction: reads a snapshot file (a base and its segments, or segments alone), rebuilds
 * the index and writes it back as one base section, all on its own thread, and hands the bytes back
 * (transferred, not copied) for the store to claim as the next version. Loading: reads, decompresses and parses
 * a snapshot file (decodeSnapshotData) and hands it over a piece at a time, each when asked for
 * (handOverPieces), so that only taking the pieces in and restoring the index is left for the event loop.
 */
import {
  decodeSnapshot,
  decodeSnapshotData,
  encodeSnapshot,
  handOverPieces,
  type CompactionAnswer,
  type CompactionRequest,
  type DecodedSnapshot,
  type SnapshotPiece,
} from './persistence.ts'

declare const self: Worker

/** Snapshots being handed over, by request. */
const handingOver = new Map<number, Generator<[SnapshotPiece | DecodedSnapshot, ArrayBuffer[]]>>()

/** Posts the request's next piece, or its last (the decoded snapshot's rest), after which it is done. */
function sendNext(id: number): void {
  const pieces = handingOver.get(id)
  if (!pieces) return
  const step = pieces.next()
  if (step.done) {
    handingOver.delete(id)
    return
  }
  const [piece, transfer] = step.value
  if ('header' in piece) {
    handingOver.delete(id)
    self.postMessage({ id, decoded: piece } satisfies CompactionAnswer, transfer)
  } else self.postMessage({ id, piece } satisfies CompactionAnswer, transfer)
}

self.onmessage = async ({ data }: MessageEvent<CompactionRequest>) => {
  const { id } = data
  try {
    if ('next' in data) return sendNext(id)
    const { path, header } = data
    if (!header) {
      const decoded = decodeSnapshotData(new Uint8Array(await Bun.file(path).arrayBuffer()))
      handingOver.set(id, handOverPieces(decoded))
      return sendNext(id)
    }
    const { header: last, index } = decodeSnapshot(new Uint8Array(await Bun.file(path).arrayBuffer()))
    const bytes = encodeSnapshot(index, { ...header, embeddings: last.embeddings })
    self.postMessage({ id, bytes } satisfies CompactionAnswer, [bytes.buffer as ArrayBuffer])
  } catch (error) {
    handingOver.delete(id)
    self.postMessage({ id, error: String((error as Error).message ?? error), code: (error as NodeJS.ErrnoException).code } satisfies CompactionAnswer)
  }
}
