/**
 * A change to an organisation's index, as the service applies it and as a snapshot segment stores it.
 * Each change is encoded when it is applied, a few chunks at a time, so a save only concatenates what is
 * already encoded instead of serialising anything large on the event loop.
 *
 * Encoding of one change: u32 length + JSON (the change without its vectors), u32 length + the chunks'
 * vectors as consecutive float32 values (native byte order, as VectorStore.serialise).
 */
import type { FileChunks, OrgIndex } from './org-index.ts'

export type Change =
  | { kind: 'file'; file: FileChunks }
  | { kind: 'removePaths'; repositoryId: string; paths: readonly string[] }
  | { kind: 'removeRepository'; repositoryId: string }
  | { kind: 'commit'; repositoryId: string; commit: string; embeddings: string }

export function applyChange(index: OrgIndex, change: Change): void {
  if (change.kind === 'file') index.replaceFile(change.file)
  else if (change.kind === 'commit') index.recordCommit(change.repositoryId, change.commit, change.embeddings)
  else if (change.kind === 'removePaths') for (const path of change.paths) index.removePath(change.repositoryId, path)
  else index.removeRepository(change.repositoryId)
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export function encodeChange(change: Change): Uint8Array {
  if (change.kind !== 'file') return frame(encoder.encode(JSON.stringify(change)), new Uint8Array(0))
  const { chunks, encoded, ...file } = change.file
  return encoded ?? encodeFileChange(file, chunks)
}

/** A file's change: the file and its chunks without their vectors as JSON, then the vectors. */
export function encodeFileChange(
  file: Pick<FileChunks, 'repositoryId' | 'repositoryName' | 'path' | 'language'>,
  chunks: readonly { startLine: number; endLine: number; content: string; symbols: string[]; vector: Float32Array }[],
): Uint8Array {
  const { repositoryId, repositoryName, path, language } = file
  const stored = chunks.map(({ startLine, endLine, content, symbols }) => ({ startLine, endLine, content, symbols }))
  const text = encoder.encode(JSON.stringify({ kind: 'file', file: { repositoryId, repositoryName, path, language, chunks: stored } }))
  const dimensions = chunks[0]?.vector.length ?? 0
  const floats = new Float32Array(chunks.length * dimensions)
  for (const [i, chunk] of chunks.entries()) floats.set(chunk.vector, i * dimensions)
  return frame(text, new Uint8Array(floats.buffer))
}

function frame(text: Uint8Array, vectors: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + text.length + vectors.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, text.length)
  out.set(text, 4)
  view.setUint32(4 + text.length, vectors.length)
  out.set(vectors, 8 + text.length)
  return out
}

/** The changes of a concatenation of encoded changes, in order. */
export function* decodeChanges(bytes: Uint8Array): Generator<Change> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let at = 0
  while (at < bytes.length) {
    if (at + 4 > bytes.length) throw new Error('snapshot segment is truncated')
    const textLength = view.getUint32(at)
    const vectorAt = at + 4 + textLength
    if (vectorAt + 4 > bytes.length) throw new Error('snapshot segment is truncated')
    const vectorLength = view.getUint32(vectorAt)
    const end = vectorAt + 4 + vectorLength
    if (end > bytes.length) throw new Error('snapshot segment is truncated')
    const change = JSON.parse(decoder.decode(bytes.subarray(at + 4, vectorAt))) as Change
    if (change.kind === 'file') {
      const chunks = change.file.chunks
      // Copied out: a Float32Array needs an aligned offset, and the chunks outlive the segment's bytes.
      const floats = new Float32Array(bytes.slice(vectorAt + 4, end).buffer)
      const dimensions = chunks.length > 0 ? floats.length / chunks.length : 0
      for (const [i, chunk] of chunks.entries()) chunk.vector = floats.subarray(i * dimensions, (i + 1) * dimensions)
    }
    yield change
    at = end
  }
}
