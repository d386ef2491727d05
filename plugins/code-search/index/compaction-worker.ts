/**
 * The snapshot Worker. Compaction: reads a snapshot file (a base and its segments, or segments alone), rebuilds
 * the index and writes it back as one base section, all on its own thread, and hands the bytes back
 * (transferred, not copied) for the store to claim as the next version. Loading: reads, decompresses and parses
 * a snapshot file (decodeSnapshotData), so that only restoring the index is left for the event loop.
 */
import { decodeSnapshot, decodeSnapshotData, encodeSnapshot, sendDecoded, type CompactionAnswer, type CompactionRequest } from './persistence.ts'

declare const self: Worker

self.onmessage = async ({ data }: MessageEvent<CompactionRequest>) => {
  const { id, path, header } = data
  try {
    if (!header) {
      const decoded = decodeSnapshotData(new Uint8Array(await Bun.file(path).arrayBuffer()))
      sendDecoded(id, decoded, (answer, transfer) => self.postMessage(answer, transfer))
      return
    }
    const { header: last, index } = decodeSnapshot(new Uint8Array(await Bun.file(path).arrayBuffer()))
    const bytes = encodeSnapshot(index, { ...header, embeddings: last.embeddings })
    self.postMessage({ id, bytes } satisfies CompactionAnswer, [bytes.buffer as ArrayBuffer])
  } catch (error) {
    self.postMessage({ id, error: String((error as Error).message ?? error), code: (error as NodeJS.ErrnoException).code } satisfies CompactionAnswer)
  }
}
